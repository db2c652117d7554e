"""Real knowledge files for the tests: Markdown, a CSV data dictionary, and a PDF generated object by object."""

from __future__ import annotations

import zlib

PLUGINS = [
    "assay.plugins.artifact_stores.local",
    "assay.plugins.knowledge",
    "assay.plugins.reports.markdown",
]

GLOSSARY = """# Metrics

Definitions of the shop's metrics.

## Promoted order

An order placed with a promotion: orders.promotion_id is not NULL.

## Refund rate

Refunded orders divided by all orders in the same group.
The denominator counts every order, refunded or not.

```python
# Not a heading: a comment in a code fence
rate = refunded / orders
```

### Edge cases

A cancelled order still counts in the denominator.
"""

DICTIONARY = """column,table,meaning
order_id,orders,Identifier of an order
promotion_id,orders,"The promotion used;
NULL when the order is not promoted"
amount,refunds,Money given back to the customer
"""


def pdf_bytes(pages: list[list[str]]) -> bytes:
    """A real PDF (Helvetica text, one content stream per page), written object by object with its xref."""
    objects: list[bytes] = []
    n_pages = len(pages)
    font_id = 3 + 2 * n_pages
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n_pages))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n_pages} >>".encode())
    for i, lines in enumerate(pages):
        ops = ["BT", "/F1 12 Tf", "14 TL", "72 720 Td"]
        for line in lines:
            escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            ops.append(f"({escaped}) Tj T*")
        ops.append("ET")
        stream = zlib.compress("\n".join(ops).encode("latin-1"))
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R "
            f"/Resources << /Font << /F1 {font_id} 0 R >> >> >>".encode()
        )
        objects.append(
            f"<< /Length {len(stream)} /Filter /FlateDecode >>\nstream\n".encode()
            + stream
            + b"\nendstream"
        )
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return bytes(out)


POLICY_PAGES = [
    ["Returns policy", "A refund is issued within 30 days of delivery."],
    ["Chargebacks", "A chargeback is not a refund and is reported separately."],
]
