"""A text is composed once per process however often it is read (policies/yamlsrc.py: _composed), and what each read
builds is its own: the cached nodes are shared, the values built from them are not, and threads building from the
same nodes at once do not see each other's work."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import yaml

from agent.campaign import load_campaign
from policies import yamlsrc
from policies.yamlsrc import SourceError, YamlSource
from tests.conftest import DEMO

TEXT = "a: 1\nb: [x, {c: 2026-01-02}]\nanchor: &n {deep: [1, 2, 3]}\nagain: *n\n"


def test_a_text_read_three_times_is_composed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = yaml.compose

    def counting(text: str, Loader: type) -> yaml.Node | None:
        calls.append(text)
        return real(text, Loader=Loader)

    monkeypatch.setattr(yaml, "compose", counting)
    text = TEXT + f"# {id(calls)}\n"  # a text no other test composed in this process
    first, second = YamlSource(Path("a.yaml"), text), YamlSource(Path("b.yaml"), text)
    YamlSource(Path("c.yaml"), text)
    assert calls == [text]
    assert first.data == second.data and first.lines == second.lines
    assert first.data is not second.data and first.data["again"] is not second.data["again"]
    first.data["a"] = 99  # one reader's change is not another's
    assert YamlSource(Path("d.yaml"), text).data["a"] == 1


def test_a_wrong_text_is_refused_with_its_own_path_every_time() -> None:
    text = "a: [1, 2\n"
    for name in ("one.yaml", "two.yaml"):
        with pytest.raises(SourceError, match=rf"^{name}:"):
            YamlSource(Path(name), text)


def test_a_large_text_is_not_kept() -> None:
    yamlsrc._composed.cache_clear()
    big = "k: v\n" + "# filler\n" * (yamlsrc.CACHED_CHARS // 9 + 1)
    assert YamlSource(Path("big.yaml"), big).data == {"k": "v"}
    assert yamlsrc._composed.cache_info().currsize == 0


def test_threads_building_from_the_same_cached_nodes_at_once_each_get_the_whole_document() -> None:
    # The demo campaign: hundreds of scalars, so that the builds overlap. One constructor shared between threads
    # made a thread take another's node in the making for a recursive one ("found unconstructable recursive node").
    text = DEMO.read_text()
    expected = YamlSource(DEMO, text).data
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def build() -> None:
        start.wait()
        for _ in range(40):
            try:
                assert YamlSource(DEMO, text).data == expected
            except BaseException as exc:  # reported below, whatever it is
                errors.append(exc)
                return

    threads = [threading.Thread(target=build) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_the_demo_campaign_loads_the_same_from_the_cache() -> None:
    yamlsrc._composed.cache_clear()
    cold = load_campaign(DEMO).campaign
    warm = load_campaign(DEMO).campaign
    assert yamlsrc._composed.cache_info().hits >= 1 and cold == warm
