#!/usr/bin/env python3
"""Writes minilm-reference.json: texts and their all-MiniLM-L6-v2 vectors as
sentence-transformers (the reference implementation, on PyTorch) computes
them. tests/reference.rs checks the candle embedder against this file.

Run once, in a throwaway virtual environment (torch is large; nothing here is
needed by the build or the tests):

    python3 -m venv /tmp/embed-ref-venv
    /tmp/embed-ref-venv/bin/pip install sentence-transformers
    MODEL_DIR="$(deploy/models/fetch-minilm.sh)"
    /tmp/embed-ref-venv/bin/python crates/embed/reference/make_reference.py "$MODEL_DIR"

The model is loaded from the local folder with the hub switched off.
"""

import json
import os
import pathlib
import sys

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import sentence_transformers  # noqa: E402
import torch  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

LONG_TRACE = "\n".join(
    [
        "Traceback (most recent call last):",
    ]
    + [
        f'  File "/srv/app/services/billing/step_{i}.py", line {40 + i}, in run_step_{i}\n'
        f"    result = pipeline.stage_{i}(invoice, ledger=ledger, retries=3)"
        for i in range(30)
    ]
    + ["KeyError: 'currency'"]
)

TEXTS = [
    # log lines
    "ERROR 2026-11-29T14:03:11Z payment-service: timeout after 30s calling ledger at 10.0.3.7:8443",
    "WARN connection pool exhausted (max=20), waiting for a free connection",
    "INFO worker-3 processed 1532 jobs in 12.4s (123.5 jobs/s)",
    '{"level":"error","msg":"failed to decode response","status":502,"path":"/api/v1/orders"}',
    "panic: runtime error: invalid memory address or nil pointer dereference",
    "java.lang.OutOfMemoryError: Java heap space",
    # stack frames
    'File "src/app/parser.py", line 88, in parse_header',
    "at com.acme.billing.InvoiceService.computeTotal(InvoiceService.java:212)",
    "thread 'main' panicked at src/config.rs:41:10: called `Option::unwrap()` on a `None` value",
    "    at Object.<anonymous> (/repo/src/utils/date.test.js:14:23)",
    "goroutine 17 [running]: main.(*Server).handle(0xc000120000) /go/src/server.go:77 +0x1d",
    # identifiers
    "parse_config_file",
    "HttpRequestTimeoutError",
    "getUserById",
    "tracelab_code_index::locate::Locator::query",
    "MAX_RETRY_ATTEMPTS",
    # commit messages
    "Fix off-by-one in pagination when the last page is full",
    "Revert \"Use the new date parser for ISO week numbers\"",
    "billing: round half to even when converting currencies",
    "Bump serde from 1.0.200 to 1.0.210",
    "Add retry with exponential backoff to the NATS publisher",
    # short sentences
    "The test fails only when run after test_cache_warmup.",
    "Division by zero when the cart is empty.",
    "The user cannot log in after changing their password.",
    "Flaky: passes on retry, fails about one run in ten.",
    "Lookup of a missing key in the settings dictionary",
    # awkward inputs: empty, unicode, mixed case and punctuation, and one
    # longer than the 256-token limit (checks truncation)
    "",
    "Échec de la connexion à la base de données : délai dépassé",
    "assert   response.status_code == 200 ,  'got 500'",
    LONG_TRACE,
]


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: make_reference.py MODEL_DIR")
    model_dir = sys.argv[1]
    torch.set_num_threads(2)
    model = SentenceTransformer(model_dir, device="cpu")
    vectors = model.encode(
        TEXTS, batch_size=8, normalize_embeddings=True, convert_to_numpy=True
    )
    tokens = [len(model.tokenize([t])["input_ids"][0]) for t in TEXTS]
    out = {
        "about": "all-MiniLM-L6-v2 vectors computed by sentence-transformers; "
        "written by make_reference.py",
        "sentence_transformers": sentence_transformers.__version__,
        "torch": torch.__version__,
        "max_seq_length": model.max_seq_length,
        "dimension": int(vectors.shape[1]),
        "texts": [
            {
                "text": t,
                "tokens": n,
                "vector": [round(float(x), 7) for x in v],
            }
            for t, n, v in zip(TEXTS, tokens, vectors)
        ],
    }
    # One line per text keeps the fixture's diffs readable.
    entries = ",\n  ".join(json.dumps(e, ensure_ascii=False) for e in out.pop("texts"))
    head = json.dumps(out, ensure_ascii=False, indent=1)[:-2]
    path = pathlib.Path(__file__).with_name("minilm-reference.json")
    path.write_text(f'{head},\n "texts": [\n  {entries}\n ]\n}}\n')
    print(f"wrote {len(TEXTS)} vectors to {path}; token counts {tokens}")


if __name__ == "__main__":
    main()
