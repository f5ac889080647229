"""Inline SVG charts drawn in Python: no JavaScript, no network, renders in any browser and in PDF."""
from __future__ import annotations

from html import escape
from typing import Any, Sequence

W, H = 760, 260
L, R, T, B = 56, 60, 24, 36  # margins: left axis, right axis, legend, x axis
COLORS = {"running": "#1f77b4", "waiting": "#ff7f0e", "kv": "#2ca02c", "temp": "#d62728", "clock": "#9467bd"}
GPU_DASH = ["", "6 3", "2 2", "8 3 2 3"]


def _nice_max(v: float) -> float:
    if v <= 0:
        return 1.0
    for step in (1, 2, 2.5, 5, 10):
        mag = 10 ** (len(str(int(v))) - 1)
        if v <= step * mag:
            return step * mag
    return v


def _scale(lo: float, hi: float, a: float, b: float):
    span = (hi - lo) or 1.0
    return lambda v: a + (v - lo) * (b - a) / span


def _polyline(pts: Sequence[tuple[float, float]], color: str, dash: str = "", cls: str = "") -> str:
    if not pts:
        return ""
    d = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
    dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
    dots = "".join(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.2" fill="{color}"/>' for x, y in pts) if len(pts) <= 60 else ""
    return f'<polyline class="{cls}" points="{d}" fill="none" stroke="{color}" stroke-width="1.8"{dash_attr}/>{dots}'


def _axes(x0: float, x1: float, yl: float, yr: float | None, x_label: str, l_label: str, r_label: str) -> list[str]:
    out = [f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="#fff" stroke="#999"/>']
    sx = _scale(x0, x1, L, W - R)
    for i in range(5):
        v = x0 + (x1 - x0) * i / 4
        x = sx(v)
        out.append(f'<line x1="{x:.1f}" y1="{H - B}" x2="{x:.1f}" y2="{H - B + 4}" stroke="#666"/>')
        out.append(f'<text x="{x:.1f}" y="{H - B + 16}" font-size="11" text-anchor="middle">{round(v, 1):g}</text>')
    for i in range(5):
        y = T + (H - T - B) * (1 - i / 4)
        out.append(f'<line x1="{L}" y1="{y:.1f}" x2="{W - R}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{L - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end">{yl * i / 4:g}</text>')
        if yr is not None:
            out.append(f'<text x="{W - R + 6}" y="{y + 4:.1f}" font-size="11">{yr * i / 4:g}</text>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - 4}" font-size="11" text-anchor="middle">{escape(x_label)}</text>')
    out.append(f'<text x="12" y="{(T + H - B) / 2}" font-size="11" text-anchor="middle" '
               f'transform="rotate(-90 12 {(T + H - B) / 2})">{escape(l_label)}</text>')
    if yr is not None:
        out.append(f'<text x="{W - 10}" y="{(T + H - B) / 2}" font-size="11" text-anchor="middle" '
                   f'transform="rotate(90 {W - 10} {(T + H - B) / 2})">{escape(r_label)}</text>')
    return out


def _legend(items: Sequence[tuple[str, str, str]]) -> str:
    out, x = [], L
    for label, color, dash in items:
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<line x1="{x}" y1="12" x2="{x + 18}" y2="12" stroke="{color}" stroke-width="3"{dash_attr}/>'
                   f'<text x="{x + 22}" y="16" font-size="11">{escape(label)}</text>')
        x += 30 + 7 * len(label)
    return "".join(out)


def _svg(body: list[str], title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" viewBox="0 0 {W} {H}" '
            f'width="{W}" height="{H}" font-family="sans-serif"><title>{escape(title)}</title>' + "".join(body) + "</svg>")


def runtime_svg(data: dict[str, Any]) -> str:
    """Running and waiting requests (left axis) and KV usage % (right axis) by log line; fatal error marked."""
    pts = data["points"]
    if not pts:
        return ""
    xs = [p["x"] for p in pts]
    fatal, ready = data.get("fatal_line"), data.get("ready_line")
    x0 = min(xs + [v for v in (ready,) if v])
    x1 = max(xs + [v for v in (fatal,) if v])
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    ymax = _nice_max(max([p["running"] or 0 for p in pts] + [p["waiting"] or 0 for p in pts]))
    sx, sy, sk = _scale(x0, x1, L, W - R), _scale(0, ymax, H - B, T), _scale(0, 100, H - B, T)
    body = _axes(x0, x1, ymax, 100, "log line", "requests", "KV usage %")
    for key, scale in (("running", sy), ("waiting", sy), ("kv", sk)):
        body.append(_polyline([(sx(p["x"]), scale(p[key])) for p in pts if p[key] is not None], COLORS[key], cls=key))
    for line, color, label in ((ready, "#555", "ready"), (fatal, "#c00", "fatal error")):
        if line:
            x = sx(line)
            body.append(f'<line class="marker-{label.replace(" ", "-")}" x1="{x:.1f}" y1="{T}" x2="{x:.1f}" y2="{H - B}" '
                        f'stroke="{color}" stroke-width="2" stroke-dasharray="5 3"/>'
                        f'<text x="{x + 4 if x < W - R - 110 else x - 4:.1f}" y="{T + 12}" font-size="11" fill="{color}" '
                        f'text-anchor="{"start" if x < W - R - 110 else "end"}">{label} (line {line})</text>')
    body.append(_legend([("running", COLORS["running"], ""), ("waiting", COLORS["waiting"], ""),
                         ("KV usage %", COLORS["kv"], "")]))
    return _svg(body, "running, waiting and KV usage over the log")


def gpu_svg(data: dict[str, Any]) -> str:
    """Temperature (left axis) and SM clock (right axis) per GPU over time, throttled intervals shaded."""
    series: dict[str, list[dict[str, Any]]] = data["series"]
    allp = [p for ss in series.values() for p in ss]
    if not allp:
        return ""
    x0, x1 = min(p["x"] for p in allp), max(p["x"] for p in allp)
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    tmax = _nice_max(max([p["temp"] or 0 for p in allp] + [90]))
    cmax = _nice_max(max([p["clock"] or 0 for p in allp] + [1]))
    sx, st, sc = _scale(x0, x1, L, W - R), _scale(0, tmax, H - B, T), _scale(0, cmax, H - B, T)
    body = _axes(x0, x1, tmax, cmax, data.get("x_label", "seconds"), "temperature C", "SM clock MHz")
    step = (x1 - x0) / max(1, len(allp)) / 2
    for ss in series.values():  # shade each run of throttled samples
        i = 0
        ss = sorted(ss, key=lambda p: p["x"])
        while i < len(ss):
            if ss[i]["throttled"]:
                j = i
                while j + 1 < len(ss) and ss[j + 1]["throttled"]:
                    j += 1
                a, b = sx(max(x0, ss[i]["x"] - step)), sx(min(x1, ss[j]["x"] + step))
                body.append(f'<rect class="throttle" x="{a:.1f}" y="{T}" width="{max(2.0, b - a):.1f}" '
                            f'height="{H - T - B}" fill="#f4a6a6" fill-opacity="0.35"/>')
                i = j + 1
            else:
                i += 1
    legend = []
    for n, (name, ss) in enumerate(sorted(series.items())):
        ss = sorted(ss, key=lambda p: p["x"])
        dash = GPU_DASH[n % len(GPU_DASH)]
        body.append(_polyline([(sx(p["x"]), st(p["temp"])) for p in ss if p["temp"] is not None], COLORS["temp"], dash, "temp"))
        body.append(_polyline([(sx(p["x"]), sc(p["clock"])) for p in ss if p["clock"] is not None], COLORS["clock"], dash, "clock"))
        if n < 4:
            legend.append((f"{name} temp", COLORS["temp"], dash))
            legend.append((f"{name} clock", COLORS["clock"], dash))
    legend.append(("throttled", "#f4a6a6", ""))
    body.append(_legend(legend[:9]))
    return _svg(body, "GPU temperature and SM clock, throttled intervals shaded")


def chart_svg(kind: str, data: dict[str, Any]) -> str:
    return runtime_svg(data) if kind == "runtime" else gpu_svg(data)
