"""Tests against real servers the suite starts on 127.0.0.1: OpenSSH sshd, PostgreSQL, Redis."""
