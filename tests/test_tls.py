"""TLS: --tls-cert/--tls-key, and client certificates with --tls-ca, with
certificates made at test time by the openssl command-line tool."""
import subprocess

import pytest
from pymongo.errors import ServerSelectionTimeoutError, AutoReconnect



def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """A CA, a server certificate for 127.0.0.1/localhost, and a client
    certificate, all signed by the CA; plus a client certificate from
    another CA that the server must refuse."""
    d = tmp_path_factory.mktemp("certs")
    for ca in ("ca", "rogue"):
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{ca}.key", "-out", f"{ca}.pem",
                "-days", "2", "-subj", f"/CN=tierdb test {ca}", cwd=d)
    (d / "server.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    (d / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    for name, ca in (("server", "ca"), ("client", "ca"), ("rogueclient", "rogue")):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}", cwd=d)
        ext = "server.ext" if name == "server" else "client.ext"
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
                "-out", f"{name}.crt", "-days", "2", "-extfile", ext, cwd=d)
        # pymongo wants the certificate and its key in one PEM file.
        (d / f"{name}.pem").write_text((d / f"{name}.crt").read_text() + (d / f"{name}.key").read_text())
    return d


def test_tls_connection(new_server, certs):
    t = new_server(extra_args=["--tls-cert", str(certs / "server.crt"), "--tls-key", str(certs / "server.key")],
                   tls={"ca": str(certs / "ca.pem")}).start()
    c = t.client(tls=True, tlsCAFile=str(certs / "ca.pem"))
    c.test.x.insert_one({"_id": 1})
    assert c.test.x.find_one() == {"_id": 1}
    assert "tls=true" in t.read_log()
    # SCRAM over TLS, as a deployment beyond loopback would run.
    c.admin.command("createUser", "u", pwd="p", roles=["root"])
    authed = t.client(tls=True, tlsCAFile=str(certs / "ca.pem"), username="u", password="p")
    assert authed.test.x.find_one() == {"_id": 1}
    # A client that does not speak TLS gets nothing from the server.
    plain = t.client(serverSelectionTimeoutMS=1500)
    with pytest.raises((ServerSelectionTimeoutError, AutoReconnect)):
        plain.admin.command("ping")
    # A client that does not trust the server's CA refuses it.
    wrong = t.client(tls=True, tlsCAFile=str(certs / "rogue.pem"), serverSelectionTimeoutMS=1500)
    with pytest.raises(ServerSelectionTimeoutError):
        wrong.admin.command("ping")


def test_tls_with_client_certificates(new_server, certs):
    t = new_server(extra_args=["--tls-cert", str(certs / "server.crt"), "--tls-key", str(certs / "server.key"),
                               "--tls-ca", str(certs / "ca.pem")],
                   tls={"ca": str(certs / "ca.pem"), "cert": str(certs / "client.pem")}).start()
    good = t.client(tls=True, tlsCAFile=str(certs / "ca.pem"), tlsCertificateKeyFile=str(certs / "client.pem"))
    assert good.admin.command("ping")["ok"] == 1.0
    for kw in ({}, {"tlsCertificateKeyFile": str(certs / "rogueclient.pem")}):
        bad = t.client(tls=True, tlsCAFile=str(certs / "ca.pem"), serverSelectionTimeoutMS=1500, **kw)
        with pytest.raises((ServerSelectionTimeoutError, AutoReconnect)):
            bad.admin.command("ping")
    assert "TLS handshake failed" in t.read_log()


def test_tls_flags_are_checked(tierdb_bin, tmp_path):
    for args, msg in ((["--tls-cert", "x.pem"], "--tls-cert and --tls-key go together"),
                      (["--tls-ca", "ca.pem"], "--tls-ca needs --tls-cert"),
                      (["--tls-cert", "/nonexistent.pem", "--tls-key", "/nonexistent.key"], "loading --tls-cert")):
        p = subprocess.run([tierdb_bin, "serve", "--data-dir", str(tmp_path / "d"), *args], capture_output=True, timeout=60)
        assert p.returncode != 0 and msg in p.stderr.decode(), p.stderr
