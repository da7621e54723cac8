"""A report's page as one PNG: the HTML's title, summary, PPA table and every embedded plot, laid
out with matplotlib (no browser needed: this is a composition of the page's parts, not a browser
screenshot). Used for ``dse report --page`` and the picture in docs/studies.md.
"""

from __future__ import annotations

import base64
import html as htmllib
import io
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

WIDTH_IN, DPI = 16.0, 100  # two 800 px plots side by side
TABLE_ROWS = 8


@dataclass
class PageSection:
    id: str
    title: str
    text: str
    table: list[list[str]]
    png: bytes | None


def _strip(fragment: str) -> str:
    return htmllib.unescape(re.sub(r"<[^>]+>", "", fragment)).strip()


def parse_report(text: str) -> tuple[str, list[PageSection]]:
    """The title and the sections of a page written by :func:`dse.report.html.render`."""
    title = _strip(re.search(r"<h1>(.*?)</h1>", text, re.DOTALL).group(1))  # type: ignore[union-attr]
    out = []
    for sid, body in re.findall(r'<section id="([^"]+)">(.*?)</section>', text, re.DOTALL):
        h2 = re.search(r"<h2>(.*?)</h2>", body, re.DOTALL)
        note = re.search(r'<p class="note">(.*?)</p>', body, re.DOTALL)
        img = re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', body)
        rows = [[_strip(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", tr, re.DOTALL)]
                for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.DOTALL)]
        out.append(PageSection(sid, _strip(h2.group(1)) if h2 else sid, _strip(note.group(1)) if note else "",
                               [r for r in rows if r], base64.b64decode(img.group(1)) if img else None))
    return title, out


def check_page(output: str | Path, report_html: str | Path, *inputs: str | Path | None) -> Path:
    """The page's path, checked before any work: not the report itself, nor a file of its figures
    folder (``--page report_files/pareto.png`` had replaced the report's Pareto figure), nor one of
    ``inputs``; see :func:`costmodel.atomic.check_output_file`."""
    from costmodel.atomic import check_output_file
    from costmodel.errors import UserError

    out = check_output_file(output, "page", *inputs)
    report = Path(report_html)
    if out.resolve() == report.resolve():
        raise UserError(f"{out}: the same file as the report; choose another path")
    figures = report.parent / f"{report.stem}_files"
    if out.parent.resolve() == figures.resolve():
        raise UserError(f"{out}: inside the report's figures folder {figures}, whose files the report "
                        "embeds; choose another path")
    return out


def render_page(report_html: str | Path, output: str | Path) -> Path:
    """Write ``output`` (PNG, 1600 px wide): text sections on top, then the plots two by two."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.image as mpimg
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    from costmodel.atomic import atomic_write_bytes
    from costmodel.errors import UserError

    out = check_page(output, report_html)
    try:
        title, sections = parse_report(Path(report_html).read_text())
    except (OSError, UnicodeDecodeError, AttributeError) as exc:  # (AttributeError: no <h1>, not our page)
        why = exc.strerror if isinstance(exc, OSError) else "not a page written by `dse report`"
        raise UserError(f"{report_html}: cannot read the report ({why})") from None
    texts = [s for s in sections if s.png is None]
    plots = [s for s in sections if s.png is not None]
    table_in = sum(0.25 * (min(len(s.table), TABLE_ROWS + 1) + 1) + 0.12 * (len(s.table) > TABLE_ROWS + 1)
                   for s in texts if s.table)
    text_in = 0.9 + sum(0.5 + 0.22 * len(textwrap.wrap(s.text, 150)) for s in texts) + table_in
    rows = (len(plots) + 1) // 2
    plot_in = 4.5 + 0.35
    with plt.style.context("default"), plt.rc_context({"text.parse_math": False}):  # (text as written: no $math$)
        fig = Figure(figsize=(WIDTH_IN, text_in + rows * plot_in), dpi=DPI)
        height = text_in + rows * plot_in
        y = 1 - 0.35 / height
        fig.text(0.01, y, title, fontsize=18, weight="bold", va="top")
        y -= 0.55 / height
        for s in texts:
            fig.text(0.01, y, s.title, fontsize=13, weight="bold", va="top")
            y -= 0.32 / height
            for line in textwrap.wrap(s.text, 150):
                fig.text(0.01, y, line, fontsize=9, va="top", color="0.3")
                y -= 0.22 / height
            if s.table and len(s.table) == 1:  # a header and no rows (a study with no feasible design yet)
                fig.text(0.01, y, "(none)", fontsize=9, va="top", color="0.3")
                y -= 0.5 / height
            elif s.table:
                n = min(len(s.table), TABLE_ROWS + 1)
                h = 0.25 * n / height
                ax = fig.add_axes((0.01, y - h, 0.98, h))
                ax.axis("off")
                body = [r + [""] * (len(s.table[0]) - len(r)) for r in s.table[1:n]]
                tab = ax.table(cellText=body, colLabels=s.table[0], loc="upper left", cellLoc="right")
                tab.auto_set_font_size(False)
                tab.set_fontsize(8)
                y -= h + 0.3 / height
                if len(s.table) > n:  # (the page shows the first rows; the HTML has them all)
                    fig.text(0.01, y + 0.22 / height, f"... and {len(s.table) - n} more rows in the HTML report",
                             fontsize=8, va="top", color="0.3")
                    y -= 0.12 / height
            y -= 0.18 / height
        for i, s in enumerate(plots):
            col, row = i % 2, i // 2
            top = text_in + row * plot_in
            fig.text(0.01 + 0.5 * col, 1 - top / height, s.title, fontsize=12, weight="bold", va="top")
            ax = fig.add_axes((0.5 * col, 1 - (top + plot_in) / height, 0.5, 4.5 / height))
            ax.imshow(mpimg.imread(io.BytesIO(s.png), format="png"))  # type: ignore[arg-type]
            ax.axis("off")
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
    atomic_write_bytes(out, buf.getvalue())
    return out
