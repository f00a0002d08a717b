#!/usr/bin/env python3
"""Renders XSpaces with the real consumer (the `xprof` PyPI package) and checks the rows.

Usage (with the python of a venv that has `xprof==2.24.2`):

    check_xprof.py [expectations] PATH [PATH ...]

PATH is a `.xplane.pb` file or a TensorBoard log directory (the newest run's `*.xplane.pb`
files under `<logdir>/plugins/profile/<run>/`). Each file is copied into a temporary directory
(XProf writes cache files next to its input) and converted with XProf's legacy trace viewer,
`xspace_to_tool_data([copy], "trace_viewer", {"use_saved_result": False})`, whose JSON has every
event's args. The file itself is also decoded here (a small protobuf wire reader, stdlib only)
so that what XProf draws can be compared with what the file holds.

Checks, per file, each printed as `PASS name` or `FAIL name: why`:

  convert                  XProf converted the file and returned trace JSON
  host-process             a process named `/host:CPU` exists
  roctx-rows               rows named `Host Threads/<tid>/ROCTX...` exist, each name once
                           (exactly --roctx-rows N of them when given)
  row:REGEX                (--row) exactly one `/host:CPU` row name matches REGEX
  nest:A>B>...             (--nest) in some ROCTX row an event A strictly contains (ts/dur) an
                           event B, which strictly contains the next, ...
  nest-all:A>B>...         (--nest-all) the same chain in every ROCTX row
  count:NAME=N             (--count) exactly N events named NAME in the ROCTX rows
  top:NAME                 (--top) events named NAME exist, and none lies inside another event
                           of its row (a pop that went missing would nest what follows)
  nvtx-range-args          every event in a ROCTX row has arg `nvtx_range` equal to its name
  rows-match-xspace-lines  no row collision: every `/host:CPU` line with events became its own
                           row, with its name and exactly its events (a merged row has two
                           lines' events and one of their names)
  thread-rows-no-roctx     no event outside the ROCTX rows looks like a ROCTX range (arg
                           `nvtx_range` equal to its own name)
  marks-zero-duration      the file's zero-length ROCTX events (marks) are drawn with no
                           duration; every --mark NAME is one of them
  gpu-rows                 (--gpu-rows N) a process `/device:GPU:<n>` exists with exactly N rows
                           named `Stream #<id>`, every event in them with args `kernel_details`
                           and `correlation_id`
  kernel:NAME=RANGE        (--kernel) every kernel NAME in a GPU row has arg `nvtx_range` RANGE
                           (none when RANGE is empty), and a ROCTX row has an event RANGE that
                           began before the kernel did (its launching range, drawn on the host)
  same-stats:OTHER         (--same-stats-as OTHER) XProf's kernel_stats of the file equal those of
                           OTHER, and its overview_page too but for the XSpace warnings (a merge
                           that put the same GPU work side by side must not count it twice)

Ends with `xprof consumer: N passed, M failed`; exits 1 if anything failed, 2 on bad usage.
"""

import argparse
import collections
import json
import os
import re
import shutil
import sys
import tempfile

HOST_PLANE = "/host:CPU"
ROCTX_ROW = re.compile(r"^Host Threads/\d+/ROCTX")
# Trace JSON times are microseconds as doubles; XProf's absolute times (ps in a uint64) leave
# about 2 ns of resolution, so containment allows this much slack at either end.
EPS_US = 0.01


# ---------------------------------------------------------------------------------------------
# Minimal protobuf wire reader for tensorflow.profiler.XSpace (xplane.proto; field numbers in
# xspace_and_xprof.md section 1). Only what the row comparison needs.
# ---------------------------------------------------------------------------------------------
def _varint(buf, pos):
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 70:
            raise ValueError("varint too long")


def _fields(buf):
    """{field number: [value, ...]}: ints for varint/fixed fields, bytes for length-delimited."""
    out = collections.defaultdict(list)
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = int.from_bytes(buf[pos:pos + 8], "little"), pos + 8
        elif wire == 2:
            size, pos = _varint(buf, pos)
            value, pos = bytes(buf[pos:pos + size]), pos + size
        elif wire == 5:
            value, pos = int.from_bytes(buf[pos:pos + 4], "little"), pos + 4
        else:
            raise ValueError("unsupported wire type %d" % wire)
        if pos > len(buf):
            raise ValueError("truncated field %d" % number)
        out[number].append(value)
    return out


def _int64(fields, number):
    value = fields[number][-1] if fields.get(number) else 0
    return value - (1 << 64) if value >= 1 << 63 else value


def _string(fields, number):
    return fields[number][-1].decode("utf-8", "replace") if fields.get(number) else ""


def read_xspace_lines(path):
    """{plane name: [{"name", "row_name", "events": [(event name, duration_ps)]}, ...]}."""
    with open(path, "rb") as f:
        space = _fields(f.read())
    planes = {}
    for plane_bytes in space.get(1, []):
        plane = _fields(plane_bytes)
        names = {}
        for entry_bytes in plane.get(4, []):
            entry = _fields(entry_bytes)
            meta = _fields(entry[2][-1]) if entry.get(2) else {}
            names[_int64(entry, 1)] = _string(meta, 4) or _string(meta, 2)
        lines = []
        for line_bytes in plane.get(3, []):
            line = _fields(line_bytes)
            events = []
            for event_bytes in line.get(4, []):
                event = _fields(event_bytes)
                events.append((names.get(_int64(event, 1), ""), _int64(event, 3)))
            lines.append({
                "name": _string(line, 2),
                "row_name": _string(line, 11) or _string(line, 2),
                "events": events,
            })
        planes.setdefault(_string(plane, 2), []).extend(lines)
    return planes


# ---------------------------------------------------------------------------------------------
# Inputs and conversion.
# ---------------------------------------------------------------------------------------------
def find_xspaces(path):
    """The file itself, or the newest run's *.xplane.pb files of a log directory."""
    if os.path.isfile(path):
        return [path]
    if not os.path.isdir(path):
        raise OSError("%s does not exist" % path)
    profile = os.path.join(path, "plugins", "profile")
    root = profile if os.path.isdir(profile) else path
    # Newest = last written to (a run named after a job id does not sort by time), as the CLI.
    runs = sorted((os.path.getmtime(os.path.join(root, d)), d) for d in os.listdir(root)
                  if os.path.isdir(os.path.join(root, d)))
    run_dir = os.path.join(root, runs[-1][1]) if runs else root
    files = sorted(os.path.join(run_dir, f) for f in os.listdir(run_dir) if f.endswith(".xplane.pb"))
    if not files:
        raise OSError("no *.xplane.pb under %s (expected <logdir>/plugins/profile/<run>/"
                      "<host>.xplane.pb)" % path)
    return files


def convert(path):
    """Legacy trace_viewer JSON for a copy of `path`; XProf's stderr noise is kept back and
    returned only for the failure message."""
    from xprof.convert import raw_to_tool_data  # pylint: disable=import-outside-toplevel

    with tempfile.TemporaryDirectory(prefix="check_xprof_") as tmp:
        copy = os.path.join(tmp, os.path.basename(path))
        shutil.copyfile(path, copy)
        log_path = os.path.join(tmp, "xprof_stderr.log")
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            with open(log_path, "wb") as log:
                os.dup2(log.fileno(), 2)
                try:
                    data, _ = raw_to_tool_data.xspace_to_tool_data(
                        [copy], "trace_viewer", {"use_saved_result": False})
                except Exception as e:  # pylint: disable=broad-except
                    data = None
                    error = "%s: %s" % (type(e).__name__, e)
                else:
                    error = None
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        with open(log_path, errors="replace") as log:
            said = [l.strip() for l in log if l.strip()]
        # absl's E/F lines say why; the I/W noise around them does not.
        errors = [l for l in said if l[:1] in "EF" and "No UnifiedProfileProcessor" not in l]
        tail = " | ".join((errors or said)[-3:])
    if error is None and not data:
        error = "XProf returned no data"
    if error is None:
        try:
            return json.loads(data.decode() if isinstance(data, bytes) else data), ""
        except ValueError as e:
            error = "not JSON (%s): %.200r" % (e, data)
    return None, error + ("; XProf said: " + tail if tail else "")


def convert_all(paths):
    """The streaming trace viewer's JSON (`trace_viewer@`) for copies of `paths` together, as
    XProf serves a run with several hosts selected."""
    from xprof.convert import raw_to_tool_data  # pylint: disable=import-outside-toplevel

    with tempfile.TemporaryDirectory(prefix="check_xprof_all_") as tmp:
        copies = []
        for path in paths:
            copies.append(os.path.join(tmp, os.path.basename(path)))
            shutil.copyfile(path, copies[-1])
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            with open(os.devnull, "wb") as null:
                os.dup2(null.fileno(), 2)
                try:
                    data, _ = raw_to_tool_data.xspace_to_tool_data(
                        copies, "trace_viewer@", {"use_saved_result": False})
                except Exception as e:  # pylint: disable=broad-except
                    return None, "%s: %s" % (type(e).__name__, e)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
    try:
        return json.loads(data.decode() if isinstance(data, bytes) else data), ""
    except (ValueError, AttributeError) as e:
        return None, "not JSON (%s)" % e


# ---------------------------------------------------------------------------------------------
# Checks.
# ---------------------------------------------------------------------------------------------
class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, why=""):
        if ok:
            self.passed += 1
            print("PASS %s" % name)
        else:
            self.failed += 1
            print("FAIL %s: %s" % (name, why))
        return ok


class Row:
    def __init__(self, tid, name):
        self.tid = tid
        self.name = name
        self.events = []  # trace JSON events, in order

    def is_roctx(self):
        return bool(ROCTX_ROW.match(self.name))


def host_rows(doc):
    """(pid of /host:CPU or None, [Row] of that process in tid order, only rows with events)."""
    events = [e for e in doc.get("traceEvents", []) if isinstance(e, dict) and e.get("ph")]
    pid = next((e.get("pid") for e in events if e["ph"] == "M" and e.get("name") == "process_name"
                and e.get("args", {}).get("name") == HOST_PLANE), None)
    if pid is None:
        return None, []
    names = {e.get("tid"): e.get("args", {}).get("name", "") for e in events
             if e["ph"] == "M" and e.get("name") == "thread_name" and e.get("pid") == pid}
    rows = {}
    for e in events:
        if e["ph"] != "M" and e.get("pid") == pid:
            tid = e.get("tid")
            rows.setdefault(tid, Row(tid, names.get(tid, ""))).events.append(e)
    return pid, [rows[t] for t in sorted(rows, key=lambda t: (str(type(t)), t))]


def duration(event):
    return float(event.get("dur", 0.0) or 0.0)


def contains(outer, inner):
    """`outer` strictly contains `inner`: within it (with EPS_US slack) and strictly longer."""
    o_start, i_start = float(outer["ts"]), float(inner["ts"])
    return (outer is not inner and o_start <= i_start + EPS_US and
            i_start + duration(inner) <= o_start + duration(outer) + EPS_US and
            duration(outer) > duration(inner))


def has_chain(row, chain):
    """Whether `row` has events chain[0] > chain[1] > ... nested by time containment."""
    by_name = collections.defaultdict(list)
    for e in row.events:
        if "ts" in e:
            by_name[e.get("name")].append(e)
    candidates = by_name.get(chain[0], [])
    for name in chain[1:]:
        candidates = [inner for inner in by_name.get(name, [])
                      if any(contains(outer, inner) for outer in candidates)]
    return bool(candidates)


def check_file(path, args, results, label):
    prefix = label + ":" if label else ""

    def check(name, ok, why=""):
        return results.check(prefix + name, ok, why)

    doc, error = convert(path)
    if not check("convert", doc is not None, error):
        return
    pid, rows = host_rows(doc)
    if not check("host-process", pid is not None,
                 "no process named %s in the trace JSON" % HOST_PLANE):
        return

    print("  rows of %s (pid %s):" % (HOST_PLANE, pid))
    for row in rows:
        print("    tid %-6s %3d events  %s" % (row.tid, len(row.events), row.name))
    roctx = [r for r in rows if r.is_roctx()]

    # (b) ROCTX rows, each name once.
    counts = collections.Counter(r.name for r in roctx)
    why = []
    if not roctx:
        why.append("no row named Host Threads/<tid>/ROCTX")
    if args.roctx_rows is not None and len(roctx) != args.roctx_rows:
        why.append("%d ROCTX rows, expected %d" % (len(roctx), args.roctx_rows))
    why += ["row %r appears %d times" % (n, c) for n, c in counts.items() if c > 1]
    check("roctx-rows", not why, "; ".join(why))
    for pattern in args.row:
        matching = [r.name for r in rows if re.search(pattern, r.name)]
        check("row:" + pattern, len(matching) == 1,
              "%d rows match: %s" % (len(matching), matching))

    # (c) nesting.
    for spec in args.nest:
        chain = spec.split(">")
        found = [r.name for r in roctx if has_chain(r, chain)]
        check("nest:" + spec, bool(found), "no ROCTX row nests %s" % " > ".join(chain))
    for spec in args.nest_all:
        chain = spec.split(">")
        missing = [r.name for r in roctx if not has_chain(r, chain)]
        check("nest-all:" + spec, roctx and not missing,
              "not nested in %s" % (missing or "any row: there are no ROCTX rows"))

    # (c2) counts and top-level events, summed over the ROCTX rows.
    named = collections.defaultdict(list)
    for r in roctx:
        for e in r.events:
            if "ts" in e:
                named[e.get("name")].append((r, e))
    for spec in args.count:
        name, _, want = spec.rpartition("=")
        got = len(named.get(name, []))
        check("count:" + spec, str(got) == want, "%d events named %r" % (got, name))
    for name in args.top:
        inside = [r.name for r, e in named.get(name, [])
                  if any(contains(o, e) for o in r.events if "ts" in o)]
        check("top:" + name, named.get(name) and not inside,
              "inside another range in %s" % inside if inside else "no event named %r" % name)

    # (d) nvtx_range args.
    bad = ["%s: %r has nvtx_range %r" % (r.name, e.get("name"), e.get("args", {}).get("nvtx_range"))
           for r in roctx for e in r.events if e.get("args", {}).get("nvtx_range") != e.get("name")]
    check("nvtx-range-args", roctx and not bad,
          "; ".join(bad[:5]) + (" (+%d more)" % (len(bad) - 5) if len(bad) > 5 else "")
          if bad else "no ROCTX events")

    # (e) no row collision: compare with the file's own lines.
    try:
        planes = read_xspace_lines(path)
    except (OSError, ValueError, IndexError) as e:
        check("rows-match-xspace-lines", False, "cannot decode the XSpace here: %s" % e)
        planes = None
    if planes is not None:
        lines = [l for l in planes.get(HOST_PLANE, [])
                 if l["events"] and not l["name"].startswith("counters_")]
        expected = collections.Counter(
            (l["row_name"], tuple(sorted(n for n, _ in l["events"]))) for l in lines)
        drawn = collections.Counter(
            (r.name, tuple(sorted(e.get("name", "") for e in r.events))) for r in rows)
        why = []
        if len(rows) != len(lines):
            why.append("%d rows with events for %d %s lines with events" % (
                len(rows), len(lines), HOST_PLANE))
        for (name, names), n in (expected - drawn).items():
            why.append("line %r (%d events) has no row of its own" % (name, len(names)))
        for (name, names), n in (drawn - expected).items():
            why.append("row %r holds %d events matching no single line" % (name, len(names)))
        check("rows-match-xspace-lines", not why, "; ".join(why))

    strays = ["%s: %r" % (r.name, e.get("name")) for r in rows if not r.is_roctx()
              for e in r.events if e.get("args", {}).get("nvtx_range") == e.get("name")]
    check("thread-rows-no-roctx", not strays,
          "ROCTX-like events outside ROCTX rows: %s" % "; ".join(strays[:5]))

    # (f) marks.
    why = []
    zero_in_file = collections.Counter()
    if planes is not None:
        for line in planes.get(HOST_PLANE, []):
            if ROCTX_ROW.match(line["row_name"]):
                zero_in_file.update(n for n, d in line["events"] if d == 0)
    zero_drawn = collections.Counter(e.get("name") for r in roctx for e in r.events
                                     if e.get("ph") == "i" or duration(e) == 0)
    if planes is not None and zero_in_file != zero_drawn:
        why.append("zero-length events in the file %s, drawn without duration %s" % (
            dict(zero_in_file), dict(zero_drawn)))
    for name in args.mark:
        if not zero_drawn.get(name):
            why.append("no zero-duration %r in a ROCTX row" % name)
        long_ones = [r.name for r in roctx for e in r.events
                     if e.get("name") == name and e.get("ph") != "i" and duration(e) > 0]
        if long_ones:
            why.append("%r has a duration in %s" % (name, long_ones))
    check("marks-zero-duration", not why, "; ".join(why))
    if not why and not zero_drawn:
        print("  (no marks in this trace)")

    # (g) kernel rows under the ROCTX rows that launched them.
    check_kernels(doc, args, check, roctx)


GPU_PLANE = re.compile(r"^/device:GPU:\d+$")
STREAM_ROW = re.compile(r"^Stream #\d+")


def gpu_rows(doc):
    """[Row] of every `/device:GPU:<n>` process, only rows with events."""
    events = [e for e in doc.get("traceEvents", []) if isinstance(e, dict) and e.get("ph")]
    pids = {e.get("pid") for e in events if e["ph"] == "M" and e.get("name") == "process_name"
            and GPU_PLANE.match(str(e.get("args", {}).get("name", "")))}
    names = {(e.get("pid"), e.get("tid")): e.get("args", {}).get("name", "") for e in events
             if e["ph"] == "M" and e.get("name") == "thread_name" and e.get("pid") in pids}
    rows = {}
    for e in events:
        if e["ph"] != "M" and e.get("pid") in pids:
            key = (e.get("pid"), e.get("tid"))
            rows.setdefault(key, Row(key[1], names.get(key, ""))).events.append(e)
    return [rows[k] for k in sorted(rows, key=str)]


def check_kernels(doc, args, check, roctx):
    if args.gpu_rows is None and not args.kernel:
        return
    rows = gpu_rows(doc)
    for row in rows:
        print("    GPU row %-24r %3d events" % (row.name, len(row.events)))
    why = []
    if args.gpu_rows is not None and len(rows) != args.gpu_rows:
        why.append("%d GPU rows, expected %d" % (len(rows), args.gpu_rows))
    why += ["row %r is not a stream row" % r.name for r in rows if not STREAM_ROW.match(r.name)]
    details = ("kernel_details", "memcpy_details", "Memset_details")
    bare = [e.get("name") for r in rows for e in r.events
            if not any(d in e.get("args", {}) for d in details) or "correlation_id" not in e.get("args", {})]
    if bare:
        why.append("GPU events without kernel/memcpy/Memset details or correlation_id: %s" % bare[:5])
    # --gpu-rows 0: a CPU-only trace, where no GPU row is the expectation.
    check("gpu-rows", (rows or args.gpu_rows == 0) and not why, "; ".join(why) or "no /device:GPU:<n> rows")
    for spec in args.kernel:
        name, _, range_name = spec.partition("=")
        kernels = [e for r in rows for e in r.events if e.get("name") == name]
        why = [] if kernels else ["no kernel %r in the GPU rows" % name]
        for k in kernels:
            got = k.get("args", {}).get("nvtx_range")
            if (got or "") != range_name:
                why.append("%r at %s has nvtx_range %r" % (name, k.get("ts"), got))
            elif range_name and not any(e.get("name") == range_name and
                                        float(e["ts"]) <= float(k["ts"]) + EPS_US
                                        for r in roctx for e in r.events if "ts" in e):
                why.append("no ROCTX event %r began before %r at %s" % (range_name, name, k.get("ts")))
        check("kernel:" + spec, not why, "; ".join(why))


def check_folded(path, args, results):
    """A file of several processes folded by `roctx merge --per-process`: XProf's trace viewer
    (the streaming one, `trace_viewer@`, which the UI uses; the legacy converter draws only a
    plane named exactly /host:CPU) draws each process's host plane as its own process,
    `<file> /host:CPU <process>`, with that process's ROCTX rows."""
    doc, error = convert_all([path])
    results.check("convert", doc is not None, error)
    if doc is None:
        return
    events = [e for e in doc.get("traceEvents", []) if isinstance(e, dict) and e.get("ph")]
    hosts = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M"
             and e.get("name") == "process_name"
             and " %s " % HOST_PLANE in e.get("args", {}).get("name", "")}
    names = {(e.get("pid"), e.get("tid")): e.get("args", {}).get("name", "") for e in events
             if e["ph"] == "M" and e.get("name") == "thread_name"}
    rows = collections.defaultdict(set)
    for e in events:
        if e["ph"] == "X" and e.get("pid") in hosts:
            name = names.get((e["pid"], e.get("tid")), "")
            if ROCTX_ROW.match(name):
                rows[e["pid"]].add(name)
    for pid, name in sorted(hosts.items()):
        print("  %-40s %d ROCTX rows" % (name, len(rows[pid])))
    results.check("folded-processes", len(hosts) == args.folded,
                  "%d `/host:CPU <process>` processes, expected %d" % (len(hosts), args.folded))
    if args.roctx_rows is not None:
        wrong = {hosts[p]: len(rows[p]) for p in hosts if len(rows[p]) != args.roctx_rows}
        results.check("folded-roctx-rows", not wrong,
                      "processes without %d ROCTX rows: %s" % (args.roctx_rows, wrong))


def check_hosts(files, expected, results):
    """XProf's host list for each run directory among `files`: what its run selector offers."""
    from xprof import profile_plugin  # pylint: disable=import-outside-toplevel

    by_run = {}
    for f in files:
        by_run.setdefault(os.path.dirname(f), []).append(os.path.basename(f))
    for run, names in sorted(by_run.items()):
        hosts = [h for h in profile_plugin.hosts_from_xplane_filenames(names, "trace_viewer")
                 if h != profile_plugin.ALL_HOSTS]
        print("== run %s: XProf lists %d hosts: %s" % (run, len(hosts), ", ".join(hosts)))
        results.check("hosts:%s" % os.path.basename(run), len(hosts) == expected,
                      "XProf lists %d hosts, expected %d: %s" % (len(hosts), expected, hosts))
        # All of them at once, as the trace viewer shows ALL_HOSTS: a `<host> /host:CPU` process
        # per file, each with its ROCTX events.
        doc, error = convert_all([os.path.join(run, n) for n in names])
        if doc is None:
            results.check("all-hosts:%s" % os.path.basename(run), False, error)
            continue
        events = doc.get("traceEvents", [])
        names_by_pid = {e["pid"]: e["args"]["name"] for e in events
                        if e.get("ph") == "M" and e.get("name") == "process_name"}
        host_pids = {pid for pid, name in names_by_pid.items() if name.endswith(" /host:CPU")}
        drawn = {names_by_pid[e["pid"]] for e in events
                 if e.get("ph") == "X" and e.get("pid") in host_pids}
        want = {"%s /host:CPU" % h for h in hosts}
        print("   all hosts at once: %d host processes with events" % len(drawn))
        results.check("all-hosts:%s" % os.path.basename(run), drawn == want,
                      "processes with events %s, expected %s" % (sorted(drawn), sorted(want)))


def tool_json(path, tool):
    """XProf's `tool` output for one .xplane.pb, converted from a fresh copy (no cache)."""
    from xprof.convert import raw_to_tool_data  # pylint: disable=import-outside-toplevel
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, os.path.basename(path))
        shutil.copy(path, copy)
        data, _ = raw_to_tool_data.xspace_to_tool_data([copy], tool, {"use_saved_result": False})
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)


def without_warnings(overview):
    """The overview page's JSON with the XSpace warnings' rows left out."""
    return re.sub(r'\{"c":\[\{"v":"[A-Z]+"\},\{"v":"roctx_utils: [^"]*"\}\]\},?', "", overview)


def check_same_stats(path, other, results, label):
    prefix = label + ":" if label else ""
    [reference] = find_xspaces(other)
    same_kernels = tool_json(path, "kernel_stats") == tool_json(reference, "kernel_stats")
    same_overview = without_warnings(tool_json(path, "overview_page")) == without_warnings(tool_json(reference, "overview_page"))
    why = [w for w, ok in [("kernel_stats differ", same_kernels), ("overview_page differs", same_overview)] if not ok]
    results.check(prefix + "same-stats:" + other, not why, "; ".join(why))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help=".xplane.pb file or log directory")
    parser.add_argument("--roctx-rows", type=int, help="exact number of ROCTX rows")
    parser.add_argument("--row", action="append", default=[], metavar="REGEX",
                        help="exactly one /host:CPU row name matches REGEX (repeatable)")
    parser.add_argument("--nest", action="append", default=[], metavar="A>B[>C...]",
                        help="some ROCTX row nests these events (repeatable)")
    parser.add_argument("--nest-all", action="append", default=[], metavar="A>B[>C...]",
                        help="every ROCTX row nests these events (repeatable)")
    parser.add_argument("--count", action="append", default=[], metavar="NAME=N",
                        help="exactly N events named NAME in the ROCTX rows (repeatable)")
    parser.add_argument("--top", action="append", default=[], metavar="NAME",
                        help="events named NAME exist and none is inside another (repeatable)")
    parser.add_argument("--mark", action="append", default=[], metavar="NAME",
                        help="a zero-duration ROCTX event with this name exists (repeatable)")
    parser.add_argument("--gpu-rows", type=int, help="exact number of GPU stream rows")
    parser.add_argument("--kernel", action="append", default=[], metavar="NAME=RANGE",
                        help="kernel (or copy: MemcpyH2D, ...) NAME is drawn under ROCTX range RANGE (repeatable)")
    parser.add_argument("--same-stats-as", metavar="OTHER",
                        help="XProf's kernel_stats and overview_page equal OTHER's")
    parser.add_argument("--folded", type=int, metavar="N",
                        help="each PATH is a `roctx merge --per-process` file: XProf draws N "
                        "`/host:CPU <process>` processes, each with --roctx-rows ROCTX rows")
    parser.add_argument("--hosts", type=int, metavar="N",
                        help="XProf lists exactly N hosts for the run of each PATH (its own "
                        "hosts_from_xplane_filenames over the run directory's files)")
    args = parser.parse_args(argv)

    results = Results()
    files = []
    for path in args.paths:
        try:
            files += find_xspaces(path)
        except OSError as e:
            results.check("input:" + path, False, str(e))
    try:
        import xprof  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    except ImportError as e:
        results.check("import-xprof", False, "%s (run with the python of a venv that has "
                      "xprof==2.24.2)" % e)
        files = []
    if args.hosts is not None and files:
        check_hosts(files, args.hosts, results)
    for path in files:
        print("== %s" % path)
        if args.folded is not None:
            check_folded(path, args, results)
            continue
        label = os.path.basename(path) if len(files) > 1 else ""
        if args.same_stats_as:
            check_same_stats(path, args.same_stats_as, results, label)
            continue
        check_file(path, args, results, label)
    print("xprof consumer: %d passed, %d failed" % (results.passed, results.failed))
    return 1 if results.failed or not results.passed else 0


if __name__ == "__main__":
    sys.exit(main())
