"""One self-contained HTML page (jinja2; PNGs embedded as base64) from rendered sections."""

from __future__ import annotations

import base64
from dataclasses import dataclass

import jinja2

TEMPLATE = jinja2.Template("""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 60em; color: #222; }
table { border-collapse: collapse; font-size: 0.8em; } td, th { border: 1px solid #ccc; padding: 2px 6px; }
th { background: #eee; } img { max-width: 100%; } section { margin-bottom: 2em; }
.note { color: #555; font-size: 0.9em; }
</style></head><body>
<h1>{{ title }}</h1>
{% for s in sections %}<section id="{{ s.id }}">
<h2>{{ s.title }}</h2>
{% if s.text %}<p class="note">{{ s.text }}</p>{% endif %}
{% if s.table %}{{ s.table }}{% endif %}
{% if s.png %}<img alt="{{ s.title }}" src="data:image/png;base64,{{ s.b64 }}">{% endif %}
</section>
{% endfor %}</body></html>
""", autoescape=False)  # tables are HTML from pandas; text fields are escaped in render()


@dataclass
class Section:
    id: str
    title: str
    text: str = ""
    table: str = ""
    png: bytes | None = None

    @property
    def b64(self) -> str:
        return base64.b64encode(self.png or b"").decode("ascii")


def render(title: str, sections: list[Section]) -> str:
    esc = jinja2.utils.markupsafe.escape
    safe = [Section(s.id, str(esc(s.title)), str(esc(s.text)), s.table, s.png) for s in sections]
    return TEMPLATE.render(title=str(esc(title)), sections=safe)
