#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Hostile variants of a recorded nft read-back (fuzz/corpus/nft/two-guests):
each breaks one thing libnftnl 1.2.4 would trust, in one message.  They are
committed in fuzz/corpus/nft/ (seeds that start the fuzzer at the edges),
and selftests/fuzz_corpus_test.sh checks the error each one gets.

    fuzz/hostile.py SEED OUTDIR
"""
import struct
import sys

NEWTABLE, NEWCHAIN, NEWSET, NEWSETELEM, NEWOBJ = 0, 3, 9, 12, 18


def msgs(data):
    off = 0
    while off + 16 <= len(data):
        length = struct.unpack_from('<I', data, off)[0]
        yield bytearray(data[off:off + length])
        off += (length + 3) & ~3


def attrs(buf):
    """[[type, payload]]: nf_tables nests carry no NLA_F_NESTED, so a nest
    is parsed when asked (nest())."""
    out, off = [], 0
    while off + 4 <= len(buf):
        length, typ = struct.unpack_from('<HH', buf, off)
        out.append([typ, bytes(buf[off + 4:off + length])])
        off += (length + 3) & ~3
    return out


def nest(lst, typ):
    """The attributes inside the first typ of lst, now editable in place."""
    for a in lst:
        if a[0] & 0x3fff == typ:
            if not isinstance(a[1], list):
                a[1] = attrs(a[1])
            return a[1]
    raise KeyError(typ)


def put(lst):
    out = b''
    for typ, val in lst:
        payload = put(val) if isinstance(val, list) else val
        a = struct.pack('<HH', 4 + len(payload), typ) + payload
        out += a + b'\0' * ((-len(a)) % 4)
    return out


def rebuild(msg, lst):
    body = bytes(msg[16:20]) + put(lst)
    hdr = bytearray(msg[:16])
    struct.pack_into('<I', hdr, 0, 16 + len(body))
    return bytes(hdr) + body


def u32(v):
    return struct.pack('>I', v)


def variant(stream, kind, fn):
    """Apply fn to the attributes of the first message of kind."""
    out, done = b'', False
    for m in msgs(stream):
        typ = struct.unpack_from('<H', m, 4)[0]
        if not done and typ == (10 << 8 | kind):
            lst = attrs(m[20:])
            m = fn(m, lst)
            done = True
        out += bytes(m) + b'\0' * ((-len(m)) % 4)
    return out


def elem_type_15(m, lst):
    # NFTA_SET_ELEM_LIST_ELEMENTS(3) > NFTA_LIST_ELEM > element attrs
    nest(nest(lst, 3), 1).append([15, u32(1)])
    return rebuild(m, lst)


def concat_20(m, lst):
    fields = [[1, [[1, u32(4)]]] for _ in range(20)]
    lst[:] = [a for a in lst if a[0] != 9] + [[9, [[2, fields]]]]  # DESC > CONCAT
    return rebuild(m, lst)


def table_name_no_nul(m, lst):
    lst[:] = [a for a in lst if a[0] != 1] + [[1, b'vnic']]
    return rebuild(m, lst)


def chain_flags_short(m, lst):
    lst.append([10, b'\1\0'])
    return rebuild(m, lst)


def comment_no_nul(m, lst):
    # the second element's (guest vm2's) userdata (6): its comment TLV
    # without the NUL
    elems = nest(lst, 3)
    elems[1][1] = attrs(elems[1][1])
    el = elems[1][1]
    el[:] = [a for a in el if a[0] != 6] + [[6, b'\0\x0cvm9 00000001']]
    return rebuild(m, lst)


def elem_expr_immediate(m, lst):
    el = nest(nest(lst, 3), 1)
    el.append([7, [[1, b'immediate\0'], [2, [[1, u32(0)]]]]])
    return rebuild(m, lst)


def ack_int_min(stream):
    out = bytearray(stream)
    off = 0
    while off + 16 <= len(out):
        length, typ = struct.unpack_from('<IH', out, off)
        if typ == 2:  # NLMSG_ERROR
            struct.pack_into('<i', out, off + 16, -2**31)
            break
        off += (length + 3) & ~3
    return bytes(out)


def huge_len(stream):
    out = bytearray(stream)
    struct.pack_into('<I', out, 0, 0x80000010)
    return bytes(out)


def main():
    seed = open(sys.argv[1], 'rb').read()
    d = sys.argv[2]
    cases = {
        'elem-type-15': variant(seed, NEWSETELEM, elem_type_15),
        'set-concat-20': variant(seed, NEWSET, concat_20),
        'table-name-no-nul': variant(seed, NEWTABLE, table_name_no_nul),
        'chain-flags-2-bytes': variant(seed, NEWCHAIN, chain_flags_short),
        'elem-expr-immediate': variant(seed, NEWSETELEM, elem_expr_immediate),
        'ack-int-min': ack_int_min(seed),
        'nlmsg-len-2g': huge_len(seed),
    }
    # the guests set's elements: the last NEWSETELEM dump of the seed
    out, seen = b'', 0
    for m in msgs(seed):
        typ = struct.unpack_from('<H', m, 4)[0]
        if typ == (10 << 8 | NEWSETELEM) and struct.unpack_from('<H', m, 6)[0] & 2:
            seen += 1
            if seen == 1:
                m = comment_no_nul(m, attrs(m[20:]))
        out += bytes(m) + b'\0' * ((-len(m)) % 4)
    cases['comment-no-nul'] = out
    for name, data in cases.items():
        with open(f'{d}/hostile-{name}', 'wb') as f:
            f.write(data)


main()
