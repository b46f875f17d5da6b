"""Low (issue 19): the investigation tools' credential-path list missed tokens an attacker would look for
first. Each path must be refused by the read tools (SECRET_PATH) and left out of grep (SECRET_EXCLUDES)."""

from __future__ import annotations

import pytest

from agent.exec.investigation import SECRET_EXCLUDES, SECRET_PATH

MISSED_BEFORE = [
    "/root/.cache/huggingface/token",
    "~/.cache/huggingface/stored_tokens",
    "/etc/ssh/ssh_host_ed25519_key",
    "/etc/ssh/ssh_host_rsa_key",
    "/home/u/.git-credentials",
    "/home/u/.vault-token",
    "/home/u/.pypirc",
    "/home/u/.config/gcloud/application_default_credentials.json",
]


@pytest.mark.parametrize("path", MISSED_BEFORE)
def test_credential_paths_are_refused(path):
    assert SECRET_PATH.search(path), path


@pytest.mark.parametrize("path", ["/etc/ssh/ssh_host_ed25519_key.pub", "/srv/app/tokenizer.json", "README.md"])
def test_ordinary_paths_are_not(path):
    assert not SECRET_PATH.search(path), path


def test_grep_excludes_them_too():
    for needle in ("--exclude=.git-credentials", "--exclude=.vault-token", "--exclude=ssh_host_*_key", "huggingface"):
        assert needle in SECRET_EXCLUDES
