"""Charts inside the sandbox: matplotlib figures saved as PNG files for the host.

Uploaded beside the runner (as ``assay_ci_charts``) and imported only when a
cell imports ``matplotlib.pyplot``: ``show()`` saves and closes the figures,
``savefig`` to a PNG outside ``out/`` also yields a chart, and figures still
open at the end of the cell are saved.
"""

import os
import sys

TYPE_CHECKING = False  # true to mypy; inside the sandbox nothing more is imported
if TYPE_CHECKING:
    from collections.abc import Callable


class Charts:
    """Saves figures as PNG: each figure passed to ``show()`` or open at the end of the cell."""

    def __init__(self, workdir: str, charts_dir: str, out_dir: str) -> None:
        self.workdir, self.charts_dir, self.out_dir = workdir, charts_dir, out_dir
        self.saved: list[dict] = []
        self.count = 0
        self.original_savefig: Callable[..., None] | None = None  # Figure.savefig before patch()

    def save_figure(self, fig) -> None:
        self.count += 1
        path = os.path.join(self.charts_dir, f"figure-{self.count}.png")
        (self.original_savefig or type(fig).savefig)(fig, path, format="png")
        width, height = _png_size(path)
        self.saved.append(
            {
                "path": os.path.relpath(path, self.workdir),
                "name": f"figure-{self.count}.png",
                "size": os.path.getsize(path),
                "width": width,
                "height": height,
            }
        )

    def save_open(self) -> None:
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is None:
            return
        for num in list(plt.get_fignums()):
            fig = plt.figure(num)
            try:
                self.save_figure(fig)
            except Exception as exc:  # noqa: BLE001 - one bad figure must not lose the cell
                sys.stderr.write(f"figure {num} could not be saved: {type(exc).__name__}: {exc}\n")
        plt.close("all")

    def patch(self, plt) -> None:
        charts = self

        def show(*args, **kwargs):
            for num in list(plt.get_fignums()):
                charts.save_figure(plt.figure(num))
            plt.close("all")

        plt.show = show
        from matplotlib.figure import Figure

        original = self.original_savefig = Figure.savefig

        def savefig(fig, fname, *args, **kwargs):
            out = original(fig, fname, *args, **kwargs)
            # A PNG saved anywhere is a chart; one under /workspace/out is a chart file already.
            if isinstance(fname, (str, os.PathLike)):
                path = os.path.abspath(os.fspath(fname))
                fmt = (kwargs.get("format") or os.path.splitext(path)[1][1:] or "png").lower()
                if (
                    fmt == "png"
                    and os.path.exists(path)
                    and not path.startswith(charts.out_dir + "/")
                ):
                    charts.count += 1
                    target = os.path.join(charts.charts_dir, f"figure-{charts.count}.png")
                    with open(path, "rb") as src, open(target, "wb") as dst:
                        dst.write(src.read())
                    w, h = _png_size(target)
                    charts.saved.append(
                        {
                            "path": os.path.relpath(target, charts.workdir),
                            "name": os.path.basename(path),
                            "size": os.path.getsize(target),
                            "width": w,
                            "height": h,
                        }
                    )
                # The figure is saved: do not save it again at the end of the cell.
                if plt.fignum_exists(getattr(fig, "number", -1)):
                    plt.close(fig)
            return out

        # Patched on purpose (mypy refuses an assignment to a method).
        setattr(Figure, "savefig", savefig)  # noqa: B010


def _png_size(path: str) -> tuple:
    with open(path, "rb") as fh:
        head = fh.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return (None, None)
    return (int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big"))
