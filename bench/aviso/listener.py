"""The listener of the Aviso latency benchmark (bench/aviso/run.sh), and
the direct poster of its floor.

listen URL OUT: a pyaviso 2.4.2 listener (`Client.listen` with a
`Trigger.function` callback) of every `mars` notification of class od; the
callback notes `expver/date/step time_ns` in OUT, one line each, as it is called.

post URL OUT EXPVER N INTERVAL_MS: posts N notifications (steps 0..N-1)
with pyaviso's `Client.notify`, one every INTERVAL_MS, noting the time just
before each post in OUT: the floor, a producer posting straight to the
server.
"""

import sys
import time

from pyaviso import Anonymous, AvisoClient, MemoryStore, Trigger


def client(url):
    return AvisoClient(base_url=url, auth=Anonymous(), state_store=MemoryStore())


def listen(url, out):
    f = open(out, "w", buffering=1)

    def called(n):
        t = time.time_ns()
        i = n.identifier
        f.write(f"{i['expver']}/{i['date']}/{i['step']} {t}\n")

    for _ in client(url).listen("mars", filter={"class": "od"}, triggers=[Trigger.function(called)]):
        pass


def post(url, out, expver, n, interval_ms):
    c = client(url)
    with open(out, "w") as f:
        start = time.monotonic()
        for step in range(n):
            t = time.time_ns()
            c.notify(
                event_type="mars",
                identifier={
                    "class": "od",
                    "expver": expver,
                    "domain": "g",
                    "date": "20231201",
                    "time": "1200",
                    "stream": "oper",
                    "step": str(step),
                },
                payload={"count": 1},
            )
            f.write(f"{expver}/20231201/{step} {t}\n")
            pause = start + (step + 1) * interval_ms / 1000 - time.monotonic()
            if pause > 0:
                time.sleep(pause)


if __name__ == "__main__":
    if sys.argv[1] == "listen":
        listen(sys.argv[2], sys.argv[3])
    else:
        post(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), float(sys.argv[6]))
