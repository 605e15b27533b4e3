"""`make dashboard`: the CloudWatch dashboard of template.yaml, drawn from a local run's EMF metrics.

Reads the dashboard body from template.yaml (a !Sub of a JSON string: parameters take their
defaults, resources a <Name> placeholder) and the EMF documents that `make e2e` collected in
bench/out/emf.jsonl, then draws one panel per widget at its grid position, titled as in the
template. Codeask metrics are computed from the raw EMF values the way CloudWatch would (Sum,
Average, Maximum, pNN over each period), SEARCH expressions expand to one line per dimension value,
and metric math is evaluated on the results. AWS/* metrics (Lambda, SQS, API Gateway) and alarm
states exist only in AWS: their panels say "no local data". A local run lasts about a minute, so
hourly widgets slice the run into SLICES equal periods; daily widgets keep one period per UTC day.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from fakes.cfn import CfnLoader  # noqa: E402  (the same reader the template tests use)

ROOT = Path(__file__).resolve().parents[1]
SLICES = 20
DAY_S = 86_400
GRID_COLS = 24

SUB_REF = re.compile(r"\$\{(?!!)([^}]+)\}")
SEARCH = re.compile(
    r"SEARCH\('\{(?P<schema>[^}]*)\}(?P<terms>[^']*)',\s*'(?P<stat>[^']+)',\s*(?P<period>\d+)\)"
)
TERM = re.compile(r'(\w+)="([^"]*)"')
DIM_LABEL = re.compile(r"\$\{PROP\('Dim\.(\w+)'\)\}")


# ------------------------------------------------------------------ template


def load_dashboard(template_path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The dashboard body as CloudFormation would substitute it, and the template's alarms."""
    template = yaml.load(template_path.read_text(), Loader=CfnLoader)
    params = template.get("Parameters", {})
    dashboards = [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::CloudWatch::Dashboard"
    ]
    if len(dashboards) != 1:
        raise SystemExit(f"{template_path}: expected one AWS::CloudWatch::Dashboard")
    raw = dashboards[0]["DashboardBody"]["Fn::Sub"]

    def value(m: re.Match[str]) -> str:
        ref = m.group(1)
        if ref == "AWS::Region":
            return "local"
        if ref in params:
            return str(params[ref].get("Default", ""))
        return f"<{ref}>"

    body = json.loads(SUB_REF.sub(value, raw).replace("${!", "${"))
    alarms = {
        name: r["Properties"]
        for name, r in template["Resources"].items()
        if r["Type"] == "AWS::CloudWatch::Alarm"
    }
    return body, alarms


# ------------------------------------------------------------------ EMF


@dataclass
class Series:
    """Every observation of one metric with one dimension set, as (epoch ms, value)."""

    namespace: str
    name: str
    dims: dict[str, str]
    unit: str
    points: list[tuple[int, float]] = field(default_factory=list)


def load_emf(lines: Iterable[str]) -> dict[tuple[str, str, str], Series]:
    """Series keyed by (namespace, name, dims as JSON) from EMF documents, one per line."""
    series: dict[tuple[str, str, str], Series] = {}
    for line in lines:
        line = line.strip()
        if not line.startswith("{"):
            continue
        doc = json.loads(line)
        aws = doc.get("_aws")
        if not aws:
            continue
        ts = int(aws["Timestamp"])
        for directive in aws["CloudWatchMetrics"]:
            for dim_set in directive["Dimensions"]:
                dims = {d: str(doc[d]) for d in dim_set}
                for metric in directive["Metrics"]:
                    name = metric["Name"]
                    key = (directive["Namespace"], name, json.dumps(dims, sort_keys=True))
                    s = series.setdefault(
                        key,
                        Series(directive["Namespace"], name, dims, metric.get("Unit", "None")),
                    )
                    raw = doc[name]
                    for v in raw if isinstance(raw, list) else [raw]:
                        s.points.append((ts, float(v)))
    return series


# ------------------------------------------------------------------ statistics and periods


def statistic(values: list[float], stat: str) -> float:
    if not values:
        return math.nan
    s = stat.lower()
    if s == "sum":
        return sum(values)
    if s in ("average", "avg"):
        return sum(values) / len(values)
    if s in ("maximum", "max"):
        return max(values)
    if s in ("minimum", "min"):
        return min(values)
    if s == "samplecount":
        return float(len(values))
    if s.startswith("p"):
        return percentile(values, float(s[1:]))
    raise ValueError(f"statistic {stat} is not drawn locally")


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile of the raw values (CloudWatch's is an estimate of this)."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    rank = (len(ordered) - 1) * q / 100
    lo = math.floor(rank)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (rank - lo)


@dataclass
class Periods:
    """The time buckets of one widget: slices of the local run, or whole UTC days."""

    starts_ms: list[int]
    width_ms: int
    daily: bool

    @classmethod
    def for_run(cls, first_ms: int, last_ms: int, period_s: int) -> Periods:
        if period_s >= DAY_S:
            day_ms = DAY_S * 1000
            first_day, last_day = first_ms // day_ms, last_ms // day_ms
            return cls([d * day_ms for d in range(first_day, last_day + 1)], day_ms, True)
        width = max(1000, math.ceil((last_ms - first_ms + 1) / SLICES))
        count = max(1, math.ceil((last_ms - first_ms + 1) / width))
        return cls([first_ms + i * width for i in range(count)], width, False)

    def bucket(self, points: list[tuple[int, float]]) -> list[list[float]]:
        out: list[list[float]] = [[] for _ in self.starts_ms]
        for ts, v in points:
            i = (ts - self.starts_ms[0]) // self.width_ms
            if 0 <= i < len(out):
                out[int(i)].append(v)
        return out


# ------------------------------------------------------------------ widgets


@dataclass
class Line:
    label: str
    values: list[float]
    unit: str
    right: bool = False
    overall: float = math.nan  # the statistic over the whole run


@dataclass
class Panel:
    title: str
    lines: list[Line]
    missing: list[str]  # metrics that exist only in AWS
    periods: Periods | None
    stacked: bool = False
    annotations: list[tuple[str, float]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _matching(
    series: dict[tuple[str, str, str], Series], namespace: str, name: str, dims: dict[str, Any]
) -> list[Series]:
    """Series with exactly these dimension names; a None value matches any value."""
    return [
        s
        for (ns, n, _), s in series.items()
        if (ns, n) == (namespace, name)
        and set(s.dims) == set(dims)
        and all(v is None or s.dims[d] == v for d, v in dims.items())
    ]


def _line(s_list: list[Series], stat: str, periods: Periods, label: str, right: bool) -> Line:
    points = [p for s in s_list for p in s.points]
    values = [statistic(b, stat) for b in periods.bucket(points)]
    unit = s_list[0].unit if s_list else ""
    return Line(label, values, unit, right, statistic([v for _, v in points], stat))


def _evaluate(expression: str, ids: dict[str, list[float]], n: int) -> list[float]:
    """Metric math over aligned buckets: + - * / and numbers, FILL(x, v); nan where undefined."""
    out = []
    for i in range(n):

        def fill(x: float, v: float) -> float:
            return v if math.isnan(x) else x

        scope = {k: vals[i] for k, vals in ids.items()} | {"FILL": fill}
        try:
            value = eval(expression, {"__builtins__": {}}, scope)  # noqa: S307 - template text
        except ZeroDivisionError:
            value = math.nan
        out.append(float(value))
    return out


def build_panel(
    widget: dict[str, Any],
    series: dict[tuple[str, str, str], Series],
    first_ms: int,
    last_ms: int,
    alarms: dict[str, Any],
) -> Panel:
    props = widget["properties"]
    title = props.get("title", "")
    if widget["type"] == "alarm":
        names = [a.strip("<>").removesuffix(".Arn") for a in props.get("alarms", [])]
        known = [n for n in names if n in alarms]
        return Panel(title, [], ["the states of " + ", ".join(known)], None)
    if widget["type"] != "metric":
        return Panel(title, [], [f"{widget['type']} widget"], None)

    periods = Periods.for_run(first_ms, last_ms, int(props.get("period", 300)))
    ids: dict[str, list[float]] = {}
    lines: list[Line] = []
    missing: list[str] = []
    expressions: list[dict[str, Any]] = []
    for entry in props["metrics"]:
        if isinstance(entry[0], dict):
            options = entry[0]
            found = SEARCH.search(options["expression"])
            if not found:
                expressions.append(options)
                continue
            namespace, *dims = [p.strip() for p in found.group("schema").split(",")]
            terms = dict(TERM.findall(found.group("terms")))
            name = terms.pop("MetricName")
            wanted = {d: terms.get(d) for d in dims}
            p = Periods.for_run(first_ms, last_ms, int(found.group("period")))
            periods = p
            for s in sorted(
                _matching(series, namespace, name, wanted), key=lambda s: sorted(s.dims.items())
            ):
                label = DIM_LABEL.sub(lambda m, s=s: s.dims.get(m.group(1), "?"), options["label"])
                lines.append(_line([s], found.group("stat"), p, label or name, False))
            if not _matching(series, namespace, name, wanted):
                missing.append(f"{name} (nothing emitted locally)")
            continue
        options = entry[-1] if isinstance(entry[-1], dict) else {}
        namespace, name, *pairs = entry[:-1] if options else entry
        label = options.get("label", name)
        if namespace.startswith("AWS/"):
            missing.append(f"{namespace} {name}: {label}")
            continue
        dims = dict(zip(pairs[::2], pairs[1::2], strict=True))
        stat = options.get("stat", props.get("stat", "Average"))
        p = Periods.for_run(first_ms, last_ms, int(options.get("period", props.get("period", 300))))
        periods = p
        line = _line(_matching(series, namespace, name, dims), stat, p, label, False)
        line.right = options.get("yAxis") == "right"
        if "id" in options:
            ids[options["id"]] = line.values
        if options.get("visible", True):
            lines.append(line)
    for options in expressions:
        n = len(periods.starts_ms)
        values = _evaluate(options["expression"], ids, n) if ids else [math.nan] * n
        lines.append(
            Line(options.get("label", options["expression"]), values, "",
                 options.get("yAxis") == "right", _overall(values))
        )  # fmt: skip
    annotations = [
        (a.get("label", ""), float(a["value"]))
        for a in props.get("annotations", {}).get("horizontal", [])
    ]
    return Panel(title, lines, missing, periods, bool(props.get("stacked")), annotations)


def _overall(values: list[float]) -> float:
    real = [v for v in values if not math.isnan(v)]
    return sum(real) / len(real) if real else math.nan


# ------------------------------------------------------------------ drawing


def _fmt(v: float) -> str:
    if math.isnan(v):
        return "-"
    if abs(v) >= 1e5:
        return f"{v:.3g}"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 1:
        return f"{v:.2f}".rstrip("0").rstrip(".")
    return f"{v:.4g}"


def draw(panels: list[tuple[dict[str, Any], Panel]], out: Path, heading: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = max(w["y"] + w["height"] for w, _ in panels)
    col_in, row_in, head_in = 0.8, 0.55, 0.9
    fig = plt.figure(figsize=(GRID_COLS * col_in, rows * row_in + head_in), dpi=100)
    fig_h = rows * row_in + head_in
    fig.text(0.01, 1 - 0.25 / fig_h, heading, fontsize=13, va="top", family="monospace")
    for widget, panel in panels:
        x, y, w, h = widget["x"], widget["y"], widget["width"], widget["height"]
        left = (x + 0.75) / GRID_COLS
        width = (w - 1.15 - (0.45 if any(ln.right for ln in panel.lines) else 0)) / GRID_COLS
        top = 1 - (head_in + (y + 0.45) * row_in) / fig_h
        height = (h - 1.25) * row_in / fig_h
        ax = fig.add_axes((left, top - height, width, height))
        ax.set_title(panel.title, fontsize=9, loc="left")
        if not panel.lines:
            ax.set_xticks([])
            ax.set_yticks([])
            chars = max(30, int(w * 9))
            if not panel.missing or all("nothing emitted" in m for m in panel.missing):
                text = "no local data: nothing of this was emitted in the local run"
            else:
                text = "no local data (exists only in AWS): " + "; ".join(panel.missing)
            if panel.notes:
                text = " | ".join(panel.notes) + "\n" + text
            wrapped = "\n".join(textwrap.fill(part, chars) for part in text.split("\n"))
            ax.text(0.5, 0.5, wrapped, ha="center", va="center", fontsize=7, color="dimgray",
                    transform=ax.transAxes)  # fmt: skip
            continue
        _plot(ax, panel)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)


def _plot(ax: Any, panel: Panel) -> None:
    assert panel.periods is not None
    p = panel.periods
    xs = [(s - p.starts_ms[0]) / 1000 for s in p.starts_ms]
    left_lines = [ln for ln in panel.lines if not ln.right]
    right_lines = [ln for ln in panel.lines if ln.right]
    axes = [(ax, left_lines)]
    if right_lines:
        axes.append((ax.twinx(), right_lines))
    span = p.width_ms / 1000
    centers = [x_ + span / 2 for x_ in xs]
    for target, group in axes:
        bottom = [0.0] * len(xs)
        bars = [ln for ln in group if (p.daily or panel.stacked) and not ln.right]
        for line in group:
            label = f"{line.label} (run: {_fmt(line.overall)})"
            if line in bars:
                i = bars.index(line)
                width = span * (0.8 if panel.stacked else 0.8 / len(bars))
                offset = 0.1 * span + (0 if panel.stacked else i * width)
                vals = [0.0 if math.isnan(v) else v for v in line.values]
                drawn = target.bar([x_ + offset for x_ in xs], vals, width=width, bottom=bottom,
                                   label=label, align="edge", alpha=0.85)  # fmt: skip
                if p.daily and not panel.stacked:
                    target.bar_label(drawn, labels=[_fmt(v) for v in vals], fontsize=6)
                if panel.stacked:
                    bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
            elif p.daily:
                target.plot(centers, line.values, marker="D", linestyle="", color="black",
                            label=label)  # fmt: skip
                for cx, v in zip(centers, line.values, strict=True):
                    target.annotate(_fmt(v), (cx, v), textcoords="offset points", xytext=(4, 4),
                                    fontsize=6)  # fmt: skip
            else:
                target.plot(centers, line.values, marker="o", markersize=3, label=label,
                            linestyle="--" if line.right else "-")  # fmt: skip
        units = {ln.unit for ln in group if ln.unit and ln.unit != "None"}
        if len(units) == 1:
            target.set_ylabel(units.pop(), fontsize=7)
        target.tick_params(labelsize=7)
    for label, value in panel.annotations:
        ax.axhline(value, color="tab:red", linewidth=1, linestyle=":")
        ax.annotate(f"{label} ({_fmt(value)})", (0.01, value), xycoords=("axes fraction", "data"),
                    fontsize=6, color="tab:red", va="bottom")  # fmt: skip
    if p.daily:
        ax.set_xticks([x_ + p.width_ms / 2000 for x_ in xs])
        ax.set_xticklabels(
            [datetime.fromtimestamp(s / 1000, UTC).strftime("%Y-%m-%d") for s in p.starts_ms]
        )
    else:
        ax.set_xlim(0, len(xs) * span)
        ax.set_xlabel(f"s into the local run ({span:g}-s periods)", fontsize=7)
    handles = [h for a, _ in axes for h in a.get_legend_handles_labels()[0]]
    labels = [lb for a, _ in axes for lb in a.get_legend_handles_labels()[1]]
    ax.legend(handles, labels, fontsize=6, loc="upper left", framealpha=0.7)
    notes = list(panel.notes)
    if panel.missing:
        notes.append("no local data: " + "; ".join(panel.missing))
    if any(ln.unit == "Seconds" and any(v > DAY_S for v in ln.values if not math.isnan(v))
           for ln in panel.lines):  # fmt: skip
        notes.append("values over a day: the events' event_time predates the run")
    if notes:
        ax.text(0.99, 0.03, "\n".join(textwrap.fill(n, 70) for n in notes), ha="right",
                va="bottom", fontsize=6, color="dimgray", transform=ax.transAxes,
                bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none"})  # fmt: skip


# ------------------------------------------------------------------ main


def render(emf: Path, template: Path, out: Path) -> list[tuple[str, list[str]]]:
    """Draw the PNG; return each panel's title with its series' whole-run figures."""
    body, alarms = load_dashboard(template)
    series = load_emf(emf.read_text(encoding="utf-8").splitlines())
    stamps = [ts for s in series.values() for ts, _ in s.points]
    if not stamps:
        raise SystemExit(f"{emf}: no EMF documents; run `make e2e` first")
    first, last = min(stamps), max(stamps)
    panels = [(w, build_panel(w, series, first, last, alarms)) for w in body["widgets"]]
    docs = sum(1 for line in emf.read_text(encoding="utf-8").splitlines() if '"_aws"' in line)
    heading = (
        f"codeask dashboard (template.yaml) filled from a local run: {docs} EMF documents over "
        f"{(last - first) / 1000:.0f} s, {datetime.fromtimestamp(first / 1000, UTC):%Y-%m-%d %H:%M} UTC."
        f"\nHourly widgets show the run in {SLICES} equal periods; daily widgets one period per "
        "UTC day; (run: x) is the widget's statistic over the whole run."
    )
    draw(panels, out, heading)
    return [
        (p.title, [f"{ln.label}: {_fmt(ln.overall)}" for ln in p.lines]
         + [f"no local data: {m}" for m in p.missing])
        for _, p in panels
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--emf", type=Path, default=ROOT / "bench/out/emf.jsonl")
    parser.add_argument("--template", type=Path, default=ROOT / "template.yaml")
    parser.add_argument("--out", type=Path, default=ROOT / "bench/out/dashboard.png")
    args = parser.parse_args(argv)
    summary = render(args.emf, args.template, args.out)
    for title, figures in summary:
        print(f"{title}\n  " + "\n  ".join(figures or ["-"]))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
