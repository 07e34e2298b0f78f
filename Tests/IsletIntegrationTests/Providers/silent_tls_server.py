"""A TLS server that takes requests and never answers them: a token endpoint, or any HTTPS
peer, that hangs. Usage: silent_tls_server.py CERT KEY. Prints `listening <port>` once it
listens on 127.0.0.1, and `request <first line>` for every request it reads (and leaves
unanswered, its connection held open until the peer closes it)."""
import socket
import ssl
import sys
import threading

context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1], sys.argv[2])
context.set_alpn_protocols(["http/1.1"])
listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.bind(("127.0.0.1", 0))
listener.listen(16)
print(f"listening {listener.getsockname()[1]}", flush=True)


def hold(connection):
    try:
        with context.wrap_socket(connection, server_side=True) as tls:
            data = tls.recv(65536)
            if data:
                line = data.split(b"\r\n", 1)[0].decode("latin-1")
                print(f"request {line}", flush=True)
            while tls.recv(65536):
                pass
        print("closed", flush=True)
    except (OSError, ssl.SSLError) as error:
        print(f"closed ({error})", flush=True)


while True:
    connection, _ = listener.accept()
    threading.Thread(target=hold, args=(connection,), daemon=True).start()
