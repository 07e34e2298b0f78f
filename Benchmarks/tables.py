#!/usr/bin/env python3
"""Turns `islet-bench all` output into BENCHMARKS.md's tables, with Islet's ratio to each peer.

    python3 Benchmarks/tables.py results.txt [before.txt]

Every figure comes from the result lines as printed; this only arranges them. With a second
file (the same steps run against an earlier Islet build, `all --islet-only`), Islet's rows get
that build's figure beside them.
"""
import re
import sys

INGEST = re.compile(r"^ingest (?P<system>.+?) (?P<size>tiny|2KB), (?P<activities>[\d,]+) activities: (?P<rate>[\d,]+) updates/s "
                    r"\(server CPU (?P<server>\d+)%, harness CPU (?P<harness>\d+)%; server CPU per update (?P<per>[\d,]+) µs")
LATENCY = re.compile(r"^latency (?P<system>.+?) over (?P<via>.+?), (?P<activities>\d+) activities × (?P<rate>\S+) Hz, (?P<subs>\d+) subscribers: "
                     r"p50 (?P<p50>[\d.]+) ms, p99 (?P<p99>[\d.]+) ms, p99.9 (?P<p999>[\d.]+) ms \((?P<got>\d+) of (?P<sent>\d+) events; "
                     r"server CPU (?P<server>\d+)%, harness CPU (?P<harness>\d+)%")
FANOUT = re.compile(r"^fanout (?P<system>.+?) over (?P<via>.+?), (?P<subs>\d+) subscribers, (?P<updates>\d+) updates: "
                    r"last subscriber p50 (?P<last50>[\d.]+) ms, p99 (?P<last99>[\d.]+) ms; all deliveries p50 (?P<p50>[\d.]+) ms, "
                    r"p99 (?P<p99>[\d.]+) ms, p99.9 (?P<p999>[\d.]+) ms \((?P<got>\d+) of (?P<sent>\d+) deliveries; "
                    r"server CPU (?P<server>\d+)%, harness CPU (?P<harness>\d+)%")


def number(text):
    return float(text.replace(",", ""))


def parse(path):
    rows = {"ingest": [], "latency": [], "fanout": [], "other": []}
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        for kind, pattern in (("ingest", INGEST), ("latency", LATENCY), ("fanout", FANOUT)):
            match = pattern.match(line)
            if match:
                rows[kind].append(match.groupdict())
                break
        else:
            if re.match(r"^(memory|startup|apns|delivery)[ :]", line):
                rows["other"].append(line)
    return rows


def short(system):
    """`islet (SQLite WAL, synchronous=FULL)` → `Islet FULL`; a peer's name with its setting."""
    if system.startswith("islet"):
        return "Islet " + ("FULL" if "FULL" in system else "NORMAL")
    name, _, setting = system.partition(" (")
    return f"{name.capitalize()} ({setting}" if setting else name.capitalize()


def is_islet(system):
    return system.startswith("islet")


def before_of(before, kind, row, keys):
    for other in before.get(kind, []) if before else []:
        if all(other[key] == row[key] for key in keys):
            return other
    return None


def with_before(text, row, before, kind, keys, show):
    """`text`, and for an Islet row measured before too, that build's figure beside it."""
    old = before_of(before, kind, row, keys) if is_islet(row["system"]) else None
    return f"{text} (before: {show(old)})" if old else text


def ingest_table(rows, before):
    out = ["| system | content state | activities | updates/s | server CPU per update | server CPU | harness CPU | Islet FULL ÷ this |",
           "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        islet = next((r for r in rows if short(r["system"]) == "Islet FULL" and r["size"] == row["size"] and r["activities"] == row["activities"]), None)
        ratio = f"{number(islet['rate']) / number(row['rate']):.2f}×" if islet and not is_islet(row["system"]) else ""
        keys = ("system", "size", "activities")
        rate = with_before(row["rate"], row, before, "ingest", keys, lambda old: old["rate"])
        per = with_before(row["per"] + " µs", row, before, "ingest", keys, lambda old: old["per"] + " µs")
        out.append(f"| {short(row['system'])} | {row['size']} | {row['activities']} | {rate} | {per} | {row['server']}% | {row['harness']}% | {ratio} |")
    return "\n".join(out)


def percentile_text(row, keys=("p50", "p99", "p999")):
    return " / ".join(f"{row[key]}" for key in keys)


def latency_table(rows, before):
    out = ["| system | subscribers via | activities × Hz | subscribers | p50 / p99 / p99.9 (ms) | events | server CPU | harness CPU | Islet's p99 ÷ this |",
           "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        same_load = [r for r in rows if r["activities"] == row["activities"] and r["subs"] == row["subs"]]
        islet = next((r for r in same_load if short(r["system"]) == "Islet FULL" and r["via"] == "SSE"), None)
        ratio = f"{number(islet['p99']) / number(row['p99']):.2f}×" if islet and not is_islet(row["system"]) else ""
        figures = with_before(percentile_text(row), row, before, "latency", ("system", "via", "activities", "subs"), percentile_text)
        out.append(f"| {short(row['system'])} | {row['via']} | {row['activities']} × {row['rate']} | {row['subs']} | {figures} | {row['got']} of {row['sent']} | {row['server']}% | {row['harness']}% | {ratio} |")
    return "\n".join(out)


def fanout_table(rows, before):
    out = ["| system | subscribers via | subscribers | to the last subscriber p50 / p99 (ms) | all deliveries p50 / p99 / p99.9 (ms) | deliveries | server CPU | Islet's last-subscriber p50 ÷ this |",
           "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        islet = next((r for r in rows if short(r["system"]) == "Islet FULL" and r["via"] == "SSE"), None)
        ratio = f"{number(islet['last50']) / number(row['last50']):.2f}×" if islet and not is_islet(row["system"]) else ""
        last = with_before(percentile_text(row, ("last50", "last99")), row, before, "fanout", ("system", "via", "subs"),
                           lambda old: percentile_text(old, ("last50", "last99")))
        out.append(f"| {short(row['system'])} | {row['via']} | {row['subs']} | {last} | {percentile_text(row)} | {row['got']} of {row['sent']} | {row['server']}% | {ratio} |")
    return "\n".join(out)


def main():
    rows = parse(sys.argv[1])
    before = parse(sys.argv[2]) if len(sys.argv) > 2 else None
    print("### Ingest\n\n" + ingest_table(rows["ingest"], before))
    print("\n### Update → subscriber latency\n\n" + latency_table(rows["latency"], before))
    print("\n### Fan-out\n\n" + fanout_table(rows["fanout"], before))
    print("\n### Memory, start-up, APNs, delivery\n\n```\n" + "\n".join(rows["other"]) + "\n```")
    if before:
        print("\nBefore (the same steps against the earlier build):\n\n```\n" + "\n".join(before["other"]) + "\n```")


if __name__ == "__main__":
    main()
