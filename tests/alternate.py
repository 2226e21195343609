#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
# alternate.py: a TCP relay (tests/relay.py) that sends each new connection
# to the next of the PostgreSQL Unix SOCKETs in turn, as a proxy may route
# one client's two connections to two servers.
#   usage: alternate.py DIR SOCKET...
# Listens on 127.0.0.1, on a port it writes to DIR/port; runs until killed.
import itertools
import sys

import relay

targets = itertools.cycle(sys.argv[2:])
relay.serve(sys.argv[1], lambda: next(targets))
