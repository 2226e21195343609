#!/usr/bin/python3
# SPDX-License-Identifier: ISC
"""ldapd.py PORTFILE VALUE: the least LDAP server libpq's pg_service.conf
lookup talks to. It listens on 127.0.0.1 (port written to PORTFILE),
answers an anonymous bind with success and every search with one entry
whose every asked-for attribute has VALUE, then the end of the search."""
import socket
import sys


def tlv(tag, body):
    n = len(body)
    if n < 128:
        head = bytes([n])
    else:
        size = n.to_bytes((n.bit_length() + 7) // 8, "big")
        head = bytes([0x80 | len(size)]) + size
    return bytes([tag]) + head + body


def octets(s):
    return tlv(0x04, s.encode())


def result(tag):
    # resultCode success, matchedDN "", diagnosticMessage ""
    return tlv(tag, tlv(0x0A, b"\x00") + octets("") + octets(""))


def read_tlv(f):
    head = f.read(2)
    if len(head) < 2:
        return None, None
    tag, n = head[0], head[1]
    if n & 0x80:
        n = int.from_bytes(f.read(n & 0x7F), "big")
    return tag, f.read(n)


def parse(body):
    """The (tag, value) pairs of a constructed BER value."""
    out, i = [], 0
    while i < len(body):
        tag, n = body[i], body[i + 1]
        i += 2
        if n & 0x80:
            k = n & 0x7F
            n = int.from_bytes(body[i:i + k], "big")
            i += k
        out.append((tag, body[i:i + n]))
        i += n
    return out


def serve(conn, value):
    f = conn.makefile("rb")
    while True:
        tag, body = read_tlv(f)
        if tag != 0x30:
            return
        (_, msgid), (op, req) = parse(body)[:2]
        mid = tlv(0x02, msgid)
        if op == 0x60:  # bindRequest
            conn.sendall(tlv(0x30, mid + result(0x61)))
        elif op == 0x63:  # searchRequest: the attributes are its last item
            attrs = [a.decode() for _, a in parse(parse(req)[-1][1])]
            vals = b"".join(
                tlv(0x30, octets(a) + tlv(0x31, octets(value)))
                for a in attrs)
            entry = tlv(0x64, octets("cn=pglock") + tlv(0x30, vals))
            conn.sendall(tlv(0x30, mid + entry) +
                         tlv(0x30, mid + result(0x65)))
        else:  # unbindRequest, or anything else
            return


def main():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(s.getsockname()[1]))
    import os
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    while True:
        conn, _ = s.accept()
        with conn:
            serve(conn, sys.argv[2])


main()
