"""ember.utils.progress: rich in a terminal, plain periodic lines otherwise, silent when off."""
import io

from ember.utils.progress import Progress, style


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_plain_lines_every_interval_and_at_the_end(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr("ember.utils.progress.time.monotonic", clock)
    out = io.StringIO()
    with Progress("job", stream=out, interval=5.0, mode="plain") as progress:
        task = progress.task("cpu:0", total=10)
        for i in range(10):
            clock.now += 1.0          # a line every 5 s of work, not per step
            task.advance(note=f"loss {1 / (i + 1):.2f}")
    lines = out.getvalue().splitlines()
    assert lines == ["[job] cpu:0: 0/10 (0%)  [0:00]",
                     "[job] cpu:0: 5/10 (50%)  loss 0.20  [0:05]",
                     "[job] cpu:0: 10/10 (100%)  loss 0.10  [0:10]",
                     "[job] cpu:0: 10/10 (100%)  loss 0.10  [0:10] done"]


def test_unknown_totals_and_messages():
    out = io.StringIO()
    with Progress(stream=out, interval=0, mode="plain") as progress:
        task = progress.task("files")
        task.advance(3)
        progress.print("a message [with brackets]")
    assert out.getvalue().splitlines()[1].startswith("files: 3  [")
    assert "a message [with brackets]" in out.getvalue()


def test_rich_display_and_off(monkeypatch):
    out = io.StringIO()
    with Progress("job", stream=out, mode="rich") as progress:
        task = progress.task("opencl:0 [x]", total=4)
        task.advance(4, note="pip install 'ember[opencl]'")
    text = out.getvalue()
    assert "opencl:0 [x]" in text and "4/4" in text and "ember[opencl]" in text
    out = io.StringIO()
    with Progress("job", stream=out, mode="off") as progress:
        progress.task("quiet", total=2).advance(2)
    assert out.getvalue() == ""


def test_style_follows_the_stream_and_the_environment(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True
    monkeypatch.delenv("EMBER_PROGRESS", raising=False)
    assert style(io.StringIO()) == "plain" and style(Tty()) == "rich"
    monkeypatch.setenv("EMBER_PROGRESS", "plain")
    assert style(Tty()) == "plain"
