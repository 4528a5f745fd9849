"""``mmkg serve`` as a client sees it: a real uvicorn server on localhost over the sample corpus's index.

Every endpoint, bad input of every kind (JSON errors never carry a traceback), uploads confined to the
corpus root, the API key, and a publish in the middle of a burst of queries.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLE_CORPUS, free_port, stop_process_group, wait_until_up

from mmkg.graph_labels import LEAF_TYPES

PICTURE = SAMPLE_CORPUS / "space" / "images" / "hubble_placard.jpg"


@dataclass
class Sample:
    corpus: Path
    data: Path
    instance: object  # the Dagster instance that knows the partitions (a publish covers the ones it knows)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Sample:
    """A copy of the sample corpus (uploads change it) indexed through the real Dagster jobs."""
    from dagster import DagsterInstance
    from indexing import build

    root = tmp_path_factory.mktemp("api")
    corpus = root / "corpus"
    shutil.copytree(SAMPLE_CORPUS, corpus, ignore=shutil.ignore_patterns("README.md"))
    data = root / "data"
    instance = DagsterInstance.ephemeral()
    build(corpus, data, instance)
    return Sample(corpus, data, instance)


class Server:
    def __init__(self, url: str, proc: subprocess.Popen, log: Path):
        self.url, self.proc, self.log = url, proc, log

    def call(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None,
             timeout: float = 60) -> tuple[int, dict, bytes]:  # fmt: skip
        req = urllib.request.Request(self.url + path, data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as err:
            return err.code, dict(err.headers), err.read()

    def json(self, method: str, path: str, payload: object = None, headers: dict | None = None) -> tuple[int, dict]:
        body = None if payload is None else json.dumps(payload).encode()
        status, _, raw = self.call(method, path, body, {"Content-Type": "application/json", **(headers or {})})
        return status, json.loads(raw)


def start_server(index: Path, corpus: Path | None, log: Path, *extra: str) -> Server:
    port = free_port()
    cmd = [str(Path(sys.executable).parent / "mmkg"), "serve", "--index", str(index), "--port", str(port), *extra]
    if corpus is not None:
        cmd += ["--corpus", str(corpus)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "YOLO_OFFLINE": "1", "MMKG_API_KEY": ""}
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    server = Server(f"http://127.0.0.1:{port}", proc, log)
    wait_until_up(proc, lambda: server.call("GET", "/health", timeout=2)[0] == 200, "mmkg serve", log, timeout=120)
    return server


@pytest.fixture(scope="module")
def server(sample: Sample, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    # uploads here only write files (the module's shared sample index must not change under the other tests);
    # re-indexing after an upload is tested on a project of its own (test_project.py)
    srv = start_server(sample.data / "index", sample.corpus, tmp_path_factory.mktemp("log") / "serve.log",
                       "--no-reindex")  # fmt: skip
    try:
        yield srv
    finally:
        stop_process_group(srv.proc)
    assert "Traceback" not in srv.log.read_text() or "error id" in srv.log.read_text()


def multipart(fields: dict[str, str], files: list[tuple[str, str, bytes]]) -> tuple[bytes, dict]:
    boundary = uuid.uuid4().hex
    out = bytearray()
    for name, value in fields.items():
        out += f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
    for name, filename, data in files:
        out += (f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
                "Content-Type: application/octet-stream\r\n\r\n").encode() + data + b"\r\n"  # fmt: skip
    out += f"--{boundary}--\r\n".encode()
    return bytes(out), {"Content-Type": f"multipart/form-data; boundary={boundary}"}


# -- reading ----------------------------------------------------------------------------------------------


def test_health_index_strategies_and_openapi(server: Server):
    status, health = server.json("GET", "/health")
    assert status == 200 and health["status"] == "ok" and health["version"].startswith("v")
    status, info = server.json("GET", "/index")
    assert status == 200 and info["version"] == health["version"] and "space" in info["partitions"]
    assert info["encoder"].startswith("text:") and "extractive" in info["backends"] and info["counts"]
    status, strategies = server.json("GET", "/strategies")
    assert {"mg2", "mkg", "r2ag", "mmgraph", "m3kg"} <= {s["name"] for s in strategies}
    status, _, raw = server.call("GET", "/openapi.json")
    paths = json.loads(raw)["paths"]
    expected = {"/query", "/ask", "/index", "/chunks/{chunk_id}", "/images/{image_id}", "/documents", "/health"}
    assert expected <= set(paths)
    # the API docs load Swagger UI from this server, never a CDN (offline they were a blank page)
    status, _, raw = server.call("GET", "/docs")
    html = raw.decode()
    assert status == 200 and "/static/vendor/swagger-ui-bundle.js" in html and "/openapi.json" in html
    assert "http://" not in html and "https://" not in html.replace("https://fastapi.tiangolo.com", "")
    for asset in ("/static/vendor/swagger-ui-bundle.js", "/static/vendor/swagger-ui.css"):
        assert server.call("GET", asset)[0] == 200
    assert server.call("GET", "/redoc")[0] == 404  # no vendored ReDoc: off rather than blank
    status, headers, raw = server.call("GET", "/favicon.ico")
    assert status == 200 and headers["content-type"].startswith("image/svg+xml") and raw.startswith(b"<svg")


def test_query_returns_ranked_evidence(server: Server):
    status, res = server.json("POST", "/query", {"text": "Who commanded STS-93?", "k": 3})
    assert status == 200, res
    assert len(res["chunks"]) == 3 and res["strategy"] == "mg2"
    assert "Collins" in " ".join(c["text"] for c in res["chunks"])
    assert all("blob_path" not in img for c in res["chunks"] for img in c["images"])
    status, res = server.json("POST", "/query", {"text": "Who commanded STS-93?", "k": 5,
                                                 "filters": {"partition": "computing_history"}})  # fmt: skip
    assert status == 200 and {c["partition"] for c in res["chunks"]} == {"computing_history"}
    status, res = server.json("POST", "/query", {"text": "telescope", "strategy": "mkg", "k": 2})
    assert status == 200 and res["strategy"] == "mkg"


@pytest.mark.parametrize(
    ("payload", "status", "message"),
    [
        ({"text": "x", "k": -2}, 422, "k: Input should be greater than or equal to 1"),
        ({"text": "x", "k": "5"}, 422, "k: Input should be a valid integer"),
        ({"text": "x", "k": 2.5}, 422, "k: Input should be a valid integer"),
        ({"text": "x", "k": 0}, 422, "greater than or equal to 1"),
        ({"text": ""}, 422, "give text"),
        ({"text": "   \n\t"}, 422, "give text"),
        ({"text": "ok \ud800 bad"}, 422, "lone surrogate at character 3"),
        ({"text": "x" * 10_001}, 422, "over the limit of 10,000"),
        ({"text": "x", "strategy": "nope"}, 400, "unknown strategy 'nope'"),
        ({"text": "x", "params": {"alpah": 0.5}}, 400, "parameter(s) ['alpah']; known: ['alpha'"),
        # what names a model, file or endpoint of the server is not a client's to choose
        (
            {
                "text": "x",
                "strategy": "r2ag",
                "params": {"icot_backend": "openai", "icot_base_url": "http://169.254.169.254/"},
            },
            400,
            "parameter(s) ['icot_backend', 'icot_base_url'] name a model, file or endpoint of the server",
        ),
        (
            {"text": "x", "strategy": "m3kg", "params": {"ultralytics_model": "/tmp/evil.pt"}},
            400,
            "['ultralytics_model']",
        ),
        ({"text": "x", "params": {"expansion": "/etc/secrets.json"}}, 400, "['expansion'] name a model, file"),
        ({"text": "x", "params": {"expansion": "../finance"}}, 400, "['expansion'] name a model, file"),
        (
            {"text": "x", "params": {"expansion": "nautical"}},
            400,
            "no query-expansion lexicon 'nautical'; known: ['finance']",
        ),
        ({"text": "x", "filters": {"partition": 7}}, 422, "filters.partition"),
        ({"text": "x", "filters": {"colour": "red"}}, 422, "Extra inputs are not permitted"),
        ({"text": "x", "filters": {"partition": "mars"}}, 400, "no partition 'mars' in index version"),
        ({"text": "x", "filters": {"partition": ["spcae"]}}, 400, "no partition 'spcae' (did you mean 'space'?) in"),
        ({"text": "x", "surprise": 1}, 422, "surprise: Extra inputs are not permitted"),
        ([1, 2], 422, "must be a JSON object"),
    ],
)
def test_bad_queries_are_json_errors(server: Server, payload: object, status: int, message: str):
    # json.dumps escapes a lone surrogate as \ud800, which is what a broken client sends
    code, body = server.json("POST", "/query", payload)
    assert code == status, body
    assert message in body["error"] and "Traceback" not in body["error"]


def test_a_shipped_lexicon_may_be_named_or_switched_off(server: Server):
    for expansion in ("finance", ""):
        code, body = server.json(
            "POST", "/query", {"text": "What is the return on assets?", "params": {"expansion": expansion}}
        )
        assert code == 200, body
        assert body["params"]["expansion"] == expansion


def test_filter_values_are_values_not_sql(server: Server):
    code, body = server.json("POST", "/query", {"text": "x", "filters": {"doc_id": ["' OR 1=1 --", '"; DROP']}})
    assert code == 400 and "no doc_id" in body["error"]  # compared as values: unknown names, said so


def test_malformed_bodies(server: Server):
    code, _, raw = server.call("POST", "/query", b'{"text": ', {"Content-Type": "application/json"})
    assert code == 400 and "not valid JSON" in json.loads(raw)["error"]
    code, _, raw = server.call("POST", "/query", b"text=x", {"Content-Type": "text/plain"})
    assert code == 415 and "not accepted" in json.loads(raw)["error"]


def test_image_query_upload(server: Server, tmp_path: Path):
    body, headers = multipart({"request": json.dumps({"k": 3})}, [("image", "placard.jpg", PICTURE.read_bytes())])
    code, _, raw = server.call("POST", "/query", body, headers)
    res = json.loads(raw)
    assert code == 200, res
    assert res["matched_images"] and res["query_image"] == "(uploaded)"
    for bad, expected in ((b"not a picture at all", "not a readable picture"), (PICTURE.read_bytes()[:2000],
                                                                                  "corrupt or truncated")):  # fmt: skip
        body, headers = multipart({"request": "{}"}, [("image", "x.png", bad)])
        code, _, raw = server.call("POST", "/query", body, headers)
        assert code == 400 and expected in json.loads(raw)["error"]
    body, headers = multipart({"request": "{}"}, [("image", "big.png", b"\0" * (20 * 1024 * 1024 + 10))])
    code, _, raw = server.call("POST", "/query", body, headers)
    assert code == 413 and "over the limit" in json.loads(raw)["error"]


def test_ask_answers_with_citations_and_streams(server: Server):
    code, ans = server.json("POST", "/ask", {"text": "Who commanded STS-93?", "k": 4})
    assert code == 200, ans
    assert ans["citations"] and ans["backend"] == "extractive" and "STS-93" in ans["text"]
    body = json.dumps({"text": "Who commanded STS-93?", "k": 4, "stream": True}).encode()
    code, headers, raw = server.call("POST", "/ask", body, {"Content-Type": "application/json"})
    assert code == 200 and headers["content-type"].startswith("text/event-stream")
    events = [block for block in raw.decode().split("\n\n") if block.strip()]
    kinds = [b.split("\n")[0].removeprefix("event: ") for b in events]
    assert kinds[-1] == "answer" and "delta" in kinds
    final = json.loads(events[-1].split("data: ", 1)[1])
    streamed = "".join(json.loads(b.split("data: ", 1)[1])["text"] for b in events if b.startswith("event: delta"))
    assert streamed == final["text"] == ans["text"]
    code, err = server.json("POST", "/ask", {"text": "x", "backend": "gpt-17"})
    assert code == 400 and "unknown backend 'gpt-17'" in err["error"]


def test_ask_gives_the_short_answer_with_its_span_and_sentence(server: Server):
    """The quick start's question: the mission is named in the sentence after the one that asks for it."""
    q = "Which mission did the first woman to command a Space Shuttle lead?"
    code, ans = server.json("POST", "/ask", {"text": q, "k": 5})
    assert code == 200, ans
    assert ans["short_answer"] == "STS-93" and ans["text"].startswith("STS-93 [")
    sup = ans["reading"]["support"][0]
    assert sup["sentence"][sup["start"] : sup["end"]] == "STS-93"
    assert sup["label"] in {c["label"] for c in ans["citations"]}
    assert 0 < ans["confidence"] <= 1 and ans["latency_ms"]["read"] > 0


def test_chunks_images_objects_and_subgraph(server: Server, sample: Sample):
    _, res = server.json("POST", "/query", {"text": "Hubble Space Telescope placard", "k": 5})
    chunk = next(c for c in res["chunks"] if c["images"])
    code, one = server.json("GET", f"/chunks/{chunk['chunk_id']}")
    assert code == 200 and one["text"] == chunk["text"] and one["source_path"] == chunk["source_path"]
    assert server.json("GET", "/chunks/ffffffff")[0] == 404
    image_id = chunk["images"][0]["image_id"]
    code, _, raw = server.call("GET", f"/images/{image_id}")
    blob = next((sample.data / "blobs" / "images").rglob(f"{image_id}.*"))
    assert code == 200 and raw == blob.read_bytes()
    for bad in ("../../../etc/passwd", "..%2F..%2Fetc%2Fpasswd", "0" * 32):
        code, _, raw = server.call("GET", f"/images/{bad}")
        assert code == 404 and b"root:" not in raw
    with_objects = [i["image_id"] for c in res["chunks"] for i in c["images"]]
    found = None
    for iid in with_objects:
        _, objs = server.json("GET", f"/images/{iid}/objects")
        if objs["objects"]:
            found = objs
            break
    assert found is not None and len(found["objects"][0]["box"]) == 4 and found["width"] > 0
    code, _, crop = server.call("GET", f"/objects/{found['objects'][0]['object_id']}/crop")
    assert code == 200 and crop[:4] == b"\x89PNG"
    code, graph = server.json("POST", "/subgraph", {"chunk_ids": [c["chunk_id"] for c in res["chunks"]]})
    assert code == 200 and {n["kind"] for n in graph["nodes"]} >= {"chunk", "entity"}
    ids = {n["id"] for n in graph["nodes"]}
    assert graph["edges"] and all(e["source"] in ids and e["target"] in ids for e in graph["edges"])


def test_graph_node_details_and_expand(server: Server):
    """The page's graph explorer: a node's details (an entity's sentences, a picture's file name and documents), and
    a node's neighbours that are not drawn yet, with edges only to drawn or new nodes."""
    _, res = server.json("POST", "/query", {"text": "Hubble Space Telescope placard", "k": 5})
    ids = [c["chunk_id"] for c in res["chunks"]]
    _, graph = server.json("POST", "/subgraph", {"chunk_ids": ids, "max_entities": 5})
    pictures = [n for n in graph["nodes"] if n["kind"] == "image"]
    assert pictures and all(n["label"] != "picture" and "." in n["label"] for n in pictures)  # file names
    entity = next(n for n in graph["nodes"] if n["kind"] == "entity")
    code, d = server.json("GET", f"/graph/node?id={urllib.parse.quote(entity['id'])}")
    assert code == 200 and d["name"] == entity["label"] and d["occurrences"], d
    assert any(entity["label"].lower() in o["sentence"].lower() for o in d["occurrences"])
    code, d = server.json("GET", f"/graph/node?id={urllib.parse.quote(pictures[0]['id'])}")
    assert code == 200 and d["width"] > 0 and d["occurrences"] and d["occurrences"][0]["source_path"]
    code, d = server.json("GET", f"/graph/node?id=chunk:{ids[0]}")
    assert code == 200 and d["text"] == res["chunks"][0]["text"] and d["neighbours"]["entity"] > 0
    assert server.json("GET", "/graph/node?id=entity:no%20such%20thing")[0] == 404
    assert server.json("GET", "/graph/node?id=../etc/passwd")[0] == 404
    known = [n["id"] for n in graph["nodes"]]
    code, more = server.json("POST", "/graph/expand", {"node": entity["id"], "known": known, "limit": 3})
    assert code == 200 and 0 < len(more["nodes"]) <= 3, more
    new = {n["id"] for n in more["nodes"]}
    assert not new & set(known)
    assert all(e["source"] in new | set(known) and e["target"] in new | set(known) for e in more["edges"])
    assert all(e["source"] in new or e["target"] in new for e in more["edges"])
    assert server.json("POST", "/graph/expand", {"node": entity["id"], "limit": 0})[0] == 422


def test_graph_edges_say_what_they_mean(server: Server):
    """Edges carry their kind and a label: an entity-entity edge the predicate, statement and sentence of a relation
    the index holds; dates and amounts are marked as leaves (the page hides them until asked)."""
    _, res = server.json("POST", "/query", {"text": "Eileen Collins pilot training Vance Air Force Base", "k": 5})
    _, graph = server.json("POST", "/subgraph", {"chunk_ids": [c["chunk_id"] for c in res["chunks"]],
                                                 "max_entities": 30})  # fmt: skip
    kinds = {n["id"]: n["kind"] for n in graph["nodes"]}
    meaning = {frozenset({"chunk", "entity"}): "mentions", frozenset({"entity"}): "relation",
               frozenset({"chunk", "image"}): "shows", frozenset({"entity", "image"}): "depicts"}  # fmt: skip
    for e in graph["edges"]:
        assert e["kind"] == meaning[frozenset({kinds[e["source"]], kinds[e["target"]]})] and e["label"], e
    relations = [e for e in graph["edges"] if e["kind"] == "relation"]
    assert relations, graph["edges"]
    for e in relations:
        subject, _, obj = e["statement"].partition(f" — {e['label']} — ")
        assert obj and e["sentence"], e
        assert subject.lower() in e["sentence"].lower() or obj.lower() in e["sentence"].lower(), e
    leaves = [n for n in graph["nodes"] if n["leaf"]]
    assert leaves and all(n["kind"] == "entity" for n in leaves), leaves
    for n in graph["nodes"]:
        if n["kind"] == "entity":
            _, details = server.json("GET", f"/graph/node?id={urllib.parse.quote(n['id'])}")
            assert n["leaf"] == (details["type"] in LEAF_TYPES), (n, details["type"])


def test_index_overview(server: Server):
    """The page's Index view: the served version's partitions and documents, the versions, the last build."""
    code, o = server.json("GET", "/index/overview")
    assert code == 200, o
    _, info = server.json("GET", "/index")
    assert o["version"] == info["version"] and [p["partition"] for p in o["partitions"]] == info["partitions"]
    assert all(p["documents"] > 0 and p["chunks"] > 0 and len(p["published_digest"]) >= 12 for p in o["partitions"])
    # what the page shows is named for what it is: the published ids' digest, not the corpus fingerprint of
    # mmkg index status
    assert all(p["fingerprint"] == p["published_digest"] for p in o["partitions"])
    assert o["documents"]["total"] == sum(p["documents"] for p in o["partitions"])
    assert any(v["current"] and v["version"] == o["version"] for v in o["versions"])
    assert o["build"]["status"] and o["rejected"]["total"] == len(o["rejected"]["rows"])


# -- documents --------------------------------------------------------------------------------------------


def test_documents_upload_and_delete_stay_in_the_corpus(server: Server, sample: Sample):
    files = [
        ("files", "notes.md", b"# Notes\n\nThe Hubble Space Telescope was launched in 1990.\n"),
        ("files", "../../escape.md", b"# Escape\n\nA sneaky name.\n"),
        ("files", "virus.exe", b"MZ"),
        ("files", "empty.txt", b""),
    ]
    body, headers = multipart({"partition": "uploads"}, files)
    code, _, raw = server.call("POST", "/documents", body, headers)
    res = json.loads(raw)
    assert code == 201, res
    assert [s["path"] for s in res["saved"]] == ["uploads/notes.md", "uploads/escape.md"]
    assert (sample.corpus / "uploads" / "escape.md").is_file() and not (sample.corpus.parent / "escape.md").exists()
    reasons = {r["name"]: r["reason"] for r in res["rejected"]}
    assert "'.exe'" in reasons["virus.exe"] and "empty" in reasons["empty.txt"]
    assert "corpus_partition_sensor" in res["picked_up_by"] and res["fingerprint"]
    body, headers = multipart({"partition": "uploads"}, [("files", "notes.md", b"# Again\n\nx\n")])
    code, _, raw = server.call("POST", "/documents", body, headers)
    res = json.loads(raw)
    assert code == 400 and "exists; send overwrite=true" in res["rejected"][0]["reason"]
    assert res["saved"] == [] and res["picked_up_by"].startswith("nothing: no file was saved"), res  # no re-index
    body, headers = multipart({"partition": "../outside"}, [("files", "a.md", b"# a\n")])
    code, _, raw = server.call("POST", "/documents", body, headers)
    assert code == 400 and "is not a folder name" in json.loads(raw)["error"]
    code, res = server.json("DELETE", "/documents/uploads/escape.md")
    assert code == 200 and res["removed"]["path"] == "uploads/escape.md"
    assert not (sample.corpus / "uploads" / "escape.md").exists() and res["removed"]["partition_removed"] is False
    assert server.json("DELETE", "/documents/uploads/escape.md")[0] == 404
    assert server.json("GET", "/index/reindex")[1]["state"] == "off"
    code, _, raw = server.call("DELETE", "/documents/uploads/..%2F..%2Fdata%2Findex%2FCURRENT")
    assert code in (400, 404) and (sample.data / "index" / "CURRENT").exists()
    code, _, raw = server.call("DELETE", "/documents/space/../../data/index/CURRENT")
    assert code in (400, 404) and (sample.data / "index" / "CURRENT").exists()
    shutil.rmtree(sample.corpus / "uploads")


# -- security ---------------------------------------------------------------------------------------------


def test_api_key_guards_everything_but_health(sample: Sample, tmp_path: Path):
    srv = start_server(sample.data / "index", None, tmp_path / "serve.log", "--api-key", "s3cret")
    try:
        assert srv.json("GET", "/health")[0] == 200
        code, err = srv.json("POST", "/query", {"text": "STS-93"})
        assert code == 401 and "API key" in err["error"]
        assert srv.json("POST", "/query", {"text": "STS-93"}, {"Authorization": "Bearer wrong"})[0] == 401
        assert srv.json("POST", "/query", {"text": "STS-93"}, {"Authorization": "Bearer s3cret"})[0] == 200
        assert srv.json("GET", "/index", headers={"X-API-Key": "s3cret"})[0] == 200
        code, err = srv.json("POST", "/documents", {})
        assert code == 401
        code, err = srv.json("GET", "/index", headers={"X-API-Key": "s3cret"})
        assert err["documents"] is False
    finally:
        stop_process_group(srv.proc)


def test_no_key_no_public_bind(sample: Sample):
    mmkg = str(Path(sys.executable).parent / "mmkg")
    res = subprocess.run(
        [mmkg, "serve", "--index", str(sample.data / "index"), "--host", "0.0.0.0"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "MMKG_API_KEY": ""},
    )  # fmt: skip
    assert res.returncode == 2 and "set an API key" in res.stdout + res.stderr


# -- a publish in the middle of a burst ----------------------------------------------------------------------


def test_publish_during_a_burst_of_queries(server: Server, sample: Sample):
    """Queries keep answering while a new version is published; each answer is from one whole version."""
    from indexing import build

    _, before = server.json("GET", "/health")
    results: list[tuple[int, str]] = []
    stop = threading.Event()

    def burst() -> None:
        while not stop.is_set():
            code, res = server.json("POST", "/query", {"text": "Who commanded STS-93?", "k": 3})
            results.append((code, res.get("version", res.get("error", ""))))

    threads = [threading.Thread(target=burst) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        doc = sample.corpus / "space" / "eileen_collins.md"
        doc.write_text(doc.read_text() + "\nShe retired from NASA in 2006.\n")
        build(sample.corpus, sample.data, sample.instance, keys=["space"])
        deadline = time.monotonic() + 30
        while server.json("GET", "/health")[1]["version"] == before["version"] and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1.0)
    finally:
        stop.set()
        for t in threads:
            t.join()
    _, after = server.json("GET", "/health")
    assert after["version"] != before["version"] and after["reload_error"] is None
    assert results and all(code == 200 for code, _ in results), [r for r in results if r[0] != 200][:3]
    versions = {v for _, v in results}
    assert versions <= {before["version"], after["version"]} and after["version"] in versions
    _, info = server.json("GET", "/index")
    assert len(info["partitions"]) == 3  # the new version still has every partition


# -- the web page, in headless Chromium --------------------------------------------------------------------


@pytest.mark.browser
def test_web_page_asks_cites_overlays_and_draws_the_graph(server: Server):
    """Walk the page as a user would: ask, follow a citation to its highlighted sentence, open a graph node and
    expand it, search by text and by an uploaded picture (previewed), see a bad query replace the result, read
    the Index view, and use it on a phone. Screenshots go to test-artifacts/web-*.png (docs/web-*.png are copies)."""
    from test_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, _ready

    _ready()
    from playwright.sync_api import sync_playwright

    if not (Path(__file__).parent.parent / "mmkg" / "api" / "static" / "vendor" / "cytoscape.min.js").exists():
        pytest.fail("mmkg/api/static/vendor/cytoscape.min.js is missing: run scripts/setup.sh (needs npm)")
    ARTIFACTS.mkdir(exist_ok=True)
    question = "Which mission did the first woman to command a Space Shuttle lead?"
    _, expected = server.json("POST", "/ask", {"text": question, "k": 5})
    support = expected["reading"]["support"][0]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1100})
            requests: list[str] = []
            errors: list[str] = []
            page.on("request", lambda r: requests.append(r.url))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(server.url + "/", timeout=60_000)
            page.get_by_text("ready").wait_for(timeout=60_000)

            # ask; the answer's citation leads to its supporting sentence, highlighted in the whole chunk
            page.fill("#question", question)
            page.click("#ask")
            page.wait_for_function("document.querySelector('#short-answer')?.textContent.startsWith('STS-93')",
                                   timeout=60_000)  # fmt: skip
            assert "confidence" in page.inner_text("#short-answer")
            # the answer once, with its citations (it showed in a heading, a box, "Supporting evidence" and quotes);
            # the reasoning, without the reader's internal scores, behind "why"
            assert page.inner_text("#answer-box").count("STS-93") == 1, page.inner_text("#answer-box")
            assert page.locator("#answer").is_hidden()  # the extractive text only repeated the short answer
            page.click("#reading details.why summary")
            assert page.inner_text("#reading mark") == "STS-93"  # the span, marked in its sentence
            reason = page.inner_text("#reading details.why")
            assert "asks for a" in reason and "relation 0." not in reason and "sentence 1.00" not in reason
            cite = page.locator(f"#short-answer a.cite[data-label='{support['label']}']").first
            cite.wait_for(timeout=60_000)
            page.locator(f"#ev-{support['label']} mark.support").first.wait_for(timeout=60_000)
            assert "score 0.000" not in page.inner_text("#evidence")  # cited chunks have no retrieval score
            cite.click()
            active = page.locator(f"#ev-{support['label']} mark.support.active")
            assert active.count() == 1 and support["sentence"] in active.inner_text()
            assert page.inner_text(f"#ev-{support['label']} mark.active mark.answer") == "STS-93"
            assert active.is_visible() and _in_view(page, f"#ev-{support['label']} mark.support.active")
            page.screenshot(path=str(ARTIFACTS / "web-answer.png"))

            # the graph: a click on a node opens its details; its neighbours can be added
            page.wait_for_function("window.mmkgGraph && window.mmkgGraph.nodes().length > 0", timeout=60_000)
            page.locator("#graph-box").scroll_into_view_if_needed()
            # dates and amounts are hidden until asked for; a relation edge names its predicate on hover
            leaves = page.evaluate("window.mmkgGraph.nodes('[leaf]').map((n) => n.hasClass('off'))")
            assert leaves and all(leaves), leaves
            page.check("#graph-filter input[data-leaves]")
            assert not any(page.evaluate("window.mmkgGraph.nodes('[leaf]').map((n) => n.hasClass('off'))"))
            page.uncheck("#graph-filter input[data-leaves]")
            said = page.evaluate("""(() => {
                const e = window.mmkgGraph.edges("[kind = 'relation']")[0];
                e.emit('mouseover');
                return {label: e.data('label'), statement: e.data('statement'), hover: e.hasClass('hover')};
            })()""")
            assert said["hover"] and said["label"] and said["statement"] in page.inner_text("#status"), said
            before = page.evaluate("window.mmkgGraph.nodes().length")
            node = page.evaluate("""(() => {
                const n = window.mmkgGraph.nodes("[kind = 'entity']").sort((a, b) => b.degree() - a.degree())[0];
                const p = n.renderedPosition();
                return {id: n.id(), label: n.data('label'), x: p.x, y: p.y};
            })()""")
            box = page.locator("#graph").bounding_box()
            assert box is not None
            page.mouse.click(box["x"] + node["x"], box["y"] + node["y"])
            page.locator("#node-details h3").wait_for(timeout=30_000)
            assert page.inner_text("#node-details h3") == node["label"]
            assert node["label"].lower() in page.inner_text("#node-details .occurrences").lower()
            page.click("#expand")
            page.wait_for_function(f"window.mmkgGraph.nodes().length > {before}", timeout=30_000)
            page.wait_for_timeout(300)
            page.locator("#graph-box").screenshot(path=str(ARTIFACTS / "web-graph.png"))

            page.goto(server.url + "/docs", timeout=60_000)  # Swagger UI renders from the vendored files
            page.locator(".swagger-ui .title").first.wait_for(timeout=60_000)
            assert "mmkg" in page.inner_text(".swagger-ui .title")
            page.locator(".opblock-summary-path", has_text="/ask").first.wait_for(timeout=60_000)

            # search: pictures with readable object labels, picture nodes drawn as thumbnails
            page.goto(server.url + "/", timeout=60_000)
            page.get_by_text("ready").wait_for(timeout=60_000)
            page.fill("#question", "Hubble Space Telescope placard")
            page.click("#search")
            page.locator(".pic svg rect").first.wait_for(state="attached", timeout=60_000)
            tag = page.locator(".pic .tag").first
            assert float(tag.evaluate("t => parseFloat(getComputedStyle(t).fontSize)")) >= 11
            page.wait_for_function(
                "window.mmkgGraph && window.mmkgGraph.nodes('[kind = \"image\"]').length > 0", timeout=60_000
            )
            assert page.evaluate("window.mmkgGraph.nodes('[kind = \"image\"]').map(n => n.data('label'))").count(
                "picture") == 0  # fmt: skip
            page.wait_for_timeout(500)
            page.screenshot(path=str(ARTIFACTS / "web-page.png"), full_page=True)

            # a picture query: previewed before it is sent, then searched
            page.set_input_files("#image", str(PICTURE))
            page.locator("#image-preview img[src^='data:image']").wait_for(timeout=10_000)
            page.fill("#question", "")
            page.click("#search")
            page.get_by_text("chunks from version").wait_for(timeout=60_000)
            assert page.locator("#evidence li").count() > 0
            page.screenshot(path=str(ARTIFACTS / "web-picture-query.png"))

            # a bad query: its error replaces the result instead of sitting above it
            page.click("#image-preview .drop")
            assert page.locator("#image-preview").is_hidden()
            page.click("#ask")
            page.locator("#status.error").wait_for(timeout=30_000)
            assert "give text" in page.inner_text("#status")
            assert page.locator("#evidence li").count() == 0 and page.locator("#evidence-box").is_hidden()
            assert page.locator("#answer-box").is_hidden() and page.locator("#graph-box").is_hidden()

            # the Index view
            page.click("#tab-index")
            page.get_by_text("Partitions (3)").wait_for(timeout=30_000)
            body = page.inner_text("#index-body")
            assert all(k in body for k in ("computing_history", "nature_and_objects", "space", "served"))
            assert "Last build" in body and "Rejected" in body
            page.screenshot(path=str(ARTIFACTS / "web-index.png"), full_page=True)

            # a phone: the form, answer, evidence and graph stack in one column
            phone = browser.new_page(viewport={"width": 390, "height": 844})
            phone.goto(server.url + "/", timeout=60_000)
            phone.get_by_text("ready").wait_for(timeout=60_000)
            phone.fill("#question", question)
            phone.click("#ask")
            phone.wait_for_function("window.mmkgGraph && window.mmkgGraph.nodes().length > 0", timeout=60_000)
            assert phone.evaluate("document.documentElement.scrollWidth") <= 390  # nothing wider than the screen
            assert phone.locator("#key-label").is_hidden()  # no API key on this server: no key field
            phone.locator("#answer-box").scroll_into_view_if_needed()
            phone.wait_for_timeout(300)
            phone.screenshot(path=str(ARTIFACTS / "web-phone.png"))
            elsewhere = [u for u in requests if not u.startswith((server.url, "data:"))]
            assert not elsewhere, elsewhere  # no CDN, no third-party request
            assert not errors, errors
        finally:
            browser.close()


def _in_view(page: Any, selector: str) -> bool:
    """Whether the element is inside the viewport and inside its scrolled chunk box."""
    return page.evaluate(
        """(sel) => {
            const m = document.querySelector(sel), box = m.closest('.chunk-text');
            const r = m.getBoundingClientRect(), b = box.getBoundingClientRect();
            return r.top >= 0 && r.bottom <= innerHeight && r.top >= b.top - 1 && r.bottom <= b.bottom + 1;
        }""",
        selector,
    )


def test_a_slow_model_does_not_hold_up_queries(sample: Sample, scripted_llm, tmp_path: Path):
    """Answers run in their own pool: while a model takes seconds, queries still answer at once."""

    def slow(body: dict) -> str:
        time.sleep(4)
        return "Eileen Collins commanded it [1]."

    scripted_llm.answer = slow
    srv = start_server(sample.data / "index", None, tmp_path / "serve.log", "--backend", "openai", "--model", "tiny",
                       "--base-url", scripted_llm.url)  # fmt: skip
    try:
        done: dict = {}

        def ask() -> None:
            done["code"], done["body"] = srv.json("POST", "/ask", {"text": "Who commanded STS-93?"})

        asker = threading.Thread(target=ask)
        asker.start()
        time.sleep(0.5)
        timings = []
        for _ in range(5):
            t0 = time.perf_counter()
            code, _ = srv.json("POST", "/query", {"text": "Who commanded STS-93?", "k": 3})
            timings.append(time.perf_counter() - t0)
            assert code == 200
        assert asker.is_alive(), "the answer finished before the queries: the model was not slow enough to tell"
        asker.join()
        assert done["code"] == 200 and done["body"]["backend"] == "openai" and done["body"]["citations"]
        assert max(timings) < 2.0, timings
    finally:
        stop_process_group(srv.proc)
