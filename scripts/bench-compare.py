#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Compare two `vnic-bench all --out DIR` trees by structure, not figures.

    scripts/bench-compare.py BEFORE AFTER

Same files; per JSON document the same key paths, rows (in order), keys of
each row, skip/failure reasons, row notes, notes, title and parameters; per
log, Markdown and SVG the same lines and labels.  Numbers are masked, and
so is what moves with them: NOISY flags, the spread line, met/missed, a
chart's log axis, the best libvnic row a guest verdict names, which row
carries meets_target.  Lines that differ
only in order (stderr interleaved with stdout) are reported, not failed.
Exit 0 when the structure is identical.  Two runs of one binary pass.
"""
import json
import os
import re
import sys

NUM = re.compile(r'-?\d+(\.\d+)?(e[-+]?\d+)?')


def norm(s):
    if s.startswith('spread:'):
        return 'spread'  # which rows are noisy is noise
    s = re.sub(r'/tmp/[\w.\-/]+', '<tmp>', s)
    s = re.sub(r'\bNOISY\b', '', s)
    s = re.sub(r'\b(met|missed|MET|MISSED)\b', 'M', s)
    s = re.sub(r'best libvnic strategy \S+', 'best libvnic strategy <row>', s)
    if s.startswith('|-'):
        s = '|rule|'
    s = NUM.sub('#', s)
    return re.sub(r'[ \t]+', ' ', s).strip()


def paths(v, p=''):
    out = set()
    if isinstance(v, dict):
        for k, x in v.items():
            out |= {p + '.' + k} | paths(x, p + '.' + k)
    elif isinstance(v, list):
        for x in v:
            out |= paths(x, p + '[]')
    return out


bad = 0


def diff(what, x, y):
    global bad
    if x == y:
        return
    if isinstance(x, list) and isinstance(y, list) and \
       sorted(map(str, x)) == sorted(map(str, y)):
        print('order only:', what)
        return
    bad += 1
    print('DIFF', what)
    if isinstance(x, list) and isinstance(y, list):
        print('  only before:', [i for i in x if i not in y][:20])
        print('  only after :', [i for i in y if i not in x][:20])
    else:
        print('  before:', x)
        print('  after :', y)


def rows(doc, key):
    return [key(r) for r in doc.get('rows', [])]


def compare_json(rel, pa, pb):
    da, db = json.load(open(pa)), json.load(open(pb))
    diff(rel + ' key paths', sorted(paths(da)), sorted(paths(db)))
    for what, key in (
            ('rows', lambda r: r.get('method')),
            ('row keys', lambda r: (r.get('method'),
                                    sorted(paths(r) - {'.meets_target'}))),
            ('reasons', lambda r: (r.get('method'), r.get('reason'))),
            ('row notes', lambda r: norm(r.get('note') or ''))):
        diff(rel + ' ' + what, rows(da, key), rows(db, key))
    diff(rel + ' notes', [norm(n) for n in da.get('notes', [])],
         [norm(n) for n in db.get('notes', [])])
    diff(rel + ' title', norm(da.get('title', '')), norm(db.get('title', '')))
    diff(rel + ' params', da.get('params'), db.get('params'))


def svg_labels(path):
    t = re.findall(r'<text[^>]*>([^<]*)</text>', open(path).read())
    # A log axis is chosen by the figures' range (svg_wants_log()).
    return [norm(x.replace(' (log scale)', '')) for x in t
            if not NUM.fullmatch(x.strip())]


def main(a, b):
    for root, _, files in os.walk(a):
        for f in sorted(files):
            pa = os.path.join(root, f)
            rel = os.path.relpath(pa, a)
            pb = os.path.join(b, rel)
            if not os.path.exists(pb):
                diff(rel + ' exists', True, False)
            elif f.endswith('.json'):
                compare_json(rel, pa, pb)
            elif f.endswith(('.txt', '.md')):
                diff(rel + ' text',
                     [norm(l) for l in open(pa, errors='replace')],
                     [norm(l) for l in open(pb, errors='replace')])
            elif f.endswith('.svg'):
                diff(rel + ' svg labels', svg_labels(pa), svg_labels(pb))
    for root, _, files in os.walk(b):
        for f in files:
            rel = os.path.relpath(os.path.join(root, f), b)
            if not os.path.exists(os.path.join(a, rel)):
                diff(rel + ' exists (new)', False, True)
    print('IDENTICAL STRUCTURE' if not bad else '%d differences' % bad)
    return 1 if bad else 0


if __name__ == '__main__':
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
