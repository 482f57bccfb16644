"""The shareable link's payload: small matrix edits, packed compactly and restored bit-exact.

Token format (version 1)::

    v1.<base64url, no padding, of: checksum (8 bytes) + zlib(payload)>

payload = count (1 byte), then per matrix: name index (1 byte: 0 X, 1 W_q, 2 W_k, 3 W_v, 4 W_o, 5 P; see
:data:`NAMES`), number of dimensions (1 byte, 1 to 3), each dimension (uint16, big-endian), then the values as
little-endian float64 (the exact bits: -0.0 and subnormals survive).

The envelope (:class:`Envelope`, shared with the challenge links of :mod:`attention.labs.challenges`, which carry
JSON in it): checksum = the first 8 bytes of SHA-256(salt + zlib bytes), the salt b"attention-link/v1" here, so a
changed, cut or forged token is refused before anything is decompressed. Only the canonical base64 text is
accepted, so every single-character change is detected. Decompression is capped at the largest payload a valid
token can hold (no zip bomb), and the token itself is capped at :data:`MAX_TOKEN_CHARS` before any decoding.

A second format, ``d1`` (:func:`encode_diff`, :func:`decode_diff`, described below them), carries only the cells
that differ from the matrices the rest of the address rebuilds; :func:`encode_shortest` picks between the two and
:func:`decode_any` reads either.

Size: at most :data:`MAX_LINK_CELLS` = 512 cells × 8 bytes = 4 KiB of numbers, about 5.5 KB of base64
for incompressible values: fine in a URL (browsers and servers accept far longer). The checksum is an
integrity check, not a signature: anyone can make a valid token, so decoded matrices still go through
the usual validation (shapes against the preset, finite values) before use.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..errors import AttentionError
from ..names import MAX_LINK_CHARS

VERSION = "v1"
MAX_LINK_CELLS = 512
MAX_TOKEN_CHARS = MAX_LINK_CHARS  # 16,384: the one limit on a value in an address
NAMES = ("X", "W_q", "W_k", "W_v", "W_o", "P")  # by index in a link: new names only ever go at the end
MAX_NDIM = 3  # X may carry a batch axis of one (the 'The cat sat on the mat' example)
_CHECK = 8  # bytes of checksum
# The largest payload a valid token can carry: count + a header of (index, ndim, 3 dims) per name + the numbers.
MAX_PAYLOAD_BYTES = 1 + len(NAMES) * (2 + 2 * MAX_NDIM) + MAX_LINK_CELLS * 8
_B64 = re.compile(r"[A-Za-z0-9_-]*")


def _size(n: int) -> str:
    """A byte count for a message: whole KB when it is a multiple of 1024 (64 KB), else bytes (4,145 bytes)."""
    return f"{n // 1024} KB" if n % 1024 == 0 else f"{n:,} bytes"


@dataclass(frozen=True)
class Envelope:
    """One kind of link token, ``<version>.<base64url, no padding, of: checksum (8 bytes) + zlib(payload)>``.

    ``version`` is a letter and a number ("v1", "c1"); ``salt`` goes before the zlib bytes in the checksum, so a
    token of one kind never opens as another; ``max_bytes`` caps decompression; ``lead`` starts every refusal
    ("the link's edits cannot be restored"). :meth:`seal` and :meth:`open` are exact inverses; :meth:`open`
    refuses, in this order and with one set of messages: not text, over :data:`MAX_TOKEN_CHARS` (before any
    decoding), no or another version, not canonical base64url, too short, a checksum that does not match, corrupt
    zlib data, more than ``max_bytes`` unpacked, incomplete data or extra bytes.
    """

    version: str
    salt: bytes
    max_bytes: int
    lead: str

    def fail(self, message: str) -> AttentionError:
        return AttentionError(f"{self.lead}: {message}", matrix="link")

    def seal(self, payload: bytes) -> str:
        """``payload`` compressed, checksummed and written as URL-safe text."""
        compressed = zlib.compress(payload, 9)
        digest = hashlib.sha256(self.salt + compressed).digest()[:_CHECK]
        return f"{self.version}." + base64.urlsafe_b64encode(digest + compressed).rstrip(b"=").decode("ascii")

    def open(self, token: object) -> bytes:
        """The payload a token carries, every check done before anything is decompressed beyond ``max_bytes``."""
        compressed = self._checked(self._body(token))
        inflater = zlib.decompressobj()
        try:
            payload = inflater.decompress(compressed, self.max_bytes + 1)
        except zlib.error:
            raise self.fail("its data is corrupt; the link was changed or cut short") from None
        if len(payload) > self.max_bytes or inflater.unconsumed_tail:
            raise self.fail(f"it unpacks to more than {_size(self.max_bytes)}, more than any valid link holds")
        if not inflater.eof or inflater.unused_data:
            raise self.fail("its data is incomplete or has extra bytes; the link was changed or cut short")
        return payload

    def _body(self, token: object) -> str:
        """The base64url text after the version, once the token's type, length and version are checked."""
        if not isinstance(token, str):
            raise self.fail(f"expected text, got {type(token).__name__}")
        if len(token) > MAX_TOKEN_CHARS:
            raise self.fail(f"it is {len(token):,} characters long; a valid link carries at most {MAX_TOKEN_CHARS:,}")
        version, dot, body = token.strip().partition(".")
        letter = self.version[0]
        if not dot or not re.fullmatch(rf"{letter}\d{{1,4}}", version):
            raise self.fail(
                f"it does not start with a version such as '{self.version}.'; the link was changed or cut short"
            )
        if version != self.version:
            raise self.fail(
                f"it was made in format {version!r}, which this version of the dashboard does not know (it reads "
                f"{self.version!r})"
            )
        return body

    def _checked(self, body: str) -> bytes:
        """The zlib bytes of canonical base64url text whose checksum matches."""
        not_base64 = "it is not valid base64url text; the link was changed or cut short"
        if not body or not _B64.fullmatch(body) or len(body) % 4 == 1:
            raise self.fail(not_base64)
        try:
            raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        except (binascii.Error, ValueError):
            raise self.fail(not_base64) from None
        if base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii") != body:
            raise self.fail(not_base64)
        if len(raw) <= _CHECK:
            raise self.fail("it is too short; the link was changed or cut short")
        digest, compressed = raw[:_CHECK], raw[_CHECK:]
        if hashlib.sha256(self.salt + compressed).digest()[:_CHECK] != digest:
            raise self.fail("the checksum does not match; the link was changed or cut short")
        return compressed


EDITS = Envelope(VERSION, b"attention-link/v1", MAX_PAYLOAD_BYTES, "the link's edits cannot be restored")
_fail = EDITS.fail


def encode_edits(edits: Mapping[str, np.ndarray]) -> str:
    """Pack edited matrices (name -> array, names among :data:`NAMES`) into a URL-safe token.

    Each array is stored with its shape (1 to 3 dimensions, each 1 to 65535) and exact float64 bits.
    Raises AttentionError for an unknown name, a non-finite value, an empty or too-deep array, or more
    than :data:`MAX_LINK_CELLS` cells in total (the link then cannot carry the edits: share a preset
    file instead). The caller's arrays are not modified.
    """
    if not isinstance(edits, Mapping):
        raise AttentionError(
            f"edits must be a mapping of matrix name to array, got {type(edits).__name__}", matrix="link"
        )
    unknown = sorted(set(edits) - set(NAMES))
    if unknown:
        raise AttentionError(f"a link can only carry {', '.join(NAMES)}; got {unknown[0]!r}", matrix="link")
    parts = [bytes([len(edits)])]
    total = 0
    for index, name in enumerate(NAMES):
        if name not in edits:
            continue
        try:
            arr = np.asarray(edits[name], dtype=np.float64)
        except (TypeError, ValueError):
            raise AttentionError(f"{name} must be a matrix of numbers to go in a link", matrix=name) from None
        if not 1 <= arr.ndim <= MAX_NDIM or arr.size == 0 or max(arr.shape) > 0xFFFF:
            raise AttentionError(
                f"{name} has shape {arr.shape}; a link carries 1-D to {MAX_NDIM}-D arrays that are not empty",
                matrix=name,
            )
        if not np.isfinite(arr).all():
            raise AttentionError(
                f"{name} has a value that is NaN or infinite; only finite numbers go in a link", matrix=name
            )
        total += arr.size
        if total > MAX_LINK_CELLS:
            raise AttentionError(
                f"the edits hold more than {MAX_LINK_CELLS} numbers, too many for a link; download the preset file "
                f"to share them",
                matrix="link",
            )
        parts.append(struct.pack(">BB", index, arr.ndim) + struct.pack(f">{arr.ndim}H", *arr.shape))
        parts.append(arr.astype("<f8").tobytes())
    return EDITS.seal(b"".join(parts))


def decode_edits(token: str, expected_shapes: Mapping[str, tuple[int, ...]] | None = None) -> dict[str, np.ndarray]:
    """The exact inverse of :func:`encode_edits`: name -> float64 array (new, writable arrays).

    ``expected_shapes`` (optional, name -> shape of the current preset's matrix) also checks each
    restored matrix fits. Raises AttentionError, with a message fit for the page, for: a token too long
    (over :data:`MAX_TOKEN_CHARS`, refused before decoding), an unknown version, text that is not
    base64url, a failed checksum ("the link was changed or cut short"), a payload that inflates beyond
    :data:`MAX_PAYLOAD_BYTES`, unknown or repeated matrix names, sizes that do not add up, non-finite
    values, more than :data:`MAX_LINK_CELLS` cells, or a shape that differs from ``expected_shapes``.
    """
    payload = EDITS.open(token)
    return _unpack(payload, expected_shapes)


def _unpack(payload: bytes, expected_shapes: Mapping[str, tuple[int, ...]] | None) -> dict[str, np.ndarray]:
    if not payload:
        raise _fail("it is empty")
    count, pos = payload[0], 1
    if count > len(NAMES):
        raise _fail(f"it claims {count} matrices; a link carries at most {len(NAMES)}")
    out: dict[str, np.ndarray] = {}
    total = 0
    for _ in range(count):
        if pos + 2 > len(payload):
            raise _fail("it ends in the middle of a matrix header")
        index, ndim = payload[pos], payload[pos + 1]
        pos += 2
        if index >= len(NAMES):
            raise _fail(f"it names an unknown matrix (number {index}); only {', '.join(NAMES)} can be edited")
        name = NAMES[index]
        if name in out:
            raise _fail(f"it holds {name} twice")
        if not 1 <= ndim <= MAX_NDIM:
            raise _fail(f"{name} has {ndim} dimensions; a matrix has 1 to {MAX_NDIM}")
        if pos + 2 * ndim > len(payload):
            raise _fail(f"it ends in the middle of {name}'s shape")
        shape = struct.unpack_from(f">{ndim}H", payload, pos)
        pos += 2 * ndim
        size = int(np.prod(shape))
        if size == 0:
            raise _fail(f"{name} has shape {shape}, which is empty")
        total += size
        if total > MAX_LINK_CELLS:
            raise _fail(f"it holds more than {MAX_LINK_CELLS} numbers, more than a link may carry")
        end = pos + 8 * size
        if end > len(payload):
            raise _fail(f"{name} should hold {size} numbers but the data stops early")
        arr = np.frombuffer(payload, dtype="<f8", count=size, offset=pos).astype(np.float64).reshape(shape)
        pos = end
        if not np.isfinite(arr).all():
            raise _fail(f"{name} holds a value that is NaN or infinite")
        if expected_shapes is not None and name in expected_shapes and tuple(expected_shapes[name]) != arr.shape:
            want = " × ".join(str(s) for s in expected_shapes[name])
            got = " × ".join(str(s) for s in arr.shape)
            raise _fail(f"its {name} is {got} but the current {name} is {want}; the link was made for other sizes")
        out[name] = arr
    if pos != len(payload):
        raise _fail(f"it has {len(payload) - pos} unexpected bytes after the matrices")
    return out


# Edits as a difference (format d1): only the cells that differ from the matrices the rest of the address rebuilds
# (a model's own W_k, a preset's), so one edited cell of a large matrix makes a short link.
#
# payload = count (1 byte), the starting numbers' fingerprint (8 bytes, :func:`base_fingerprint`: a link made on
# other numbers, such as a later version's presets, is refused), then per matrix: name index (1 byte), number of
# dimensions (1 byte), each dimension (uint16, big-endian), the number of changed cells k (uint32, big-endian),
# their flat indices in increasing order (k × uint32, big-endian), then their values (k × little-endian float64,
# the exact bits).
DIFF_VERSION = "d1"
_DIFF_HEADER = 2 + 2 * MAX_NDIM + 4  # index, ndim, dimensions, count
_PRINT = 8  # bytes of the starting numbers' fingerprint
MAX_DIFF_PAYLOAD_BYTES = 1 + _PRINT + len(NAMES) * _DIFF_HEADER + MAX_LINK_CELLS * 12
DIFF = Envelope(DIFF_VERSION, b"attention-link/d1", MAX_DIFF_PAYLOAD_BYTES, "the link's edits cannot be restored")


def base_fingerprint(base: Mapping[str, np.ndarray], carried: list[str]) -> bytes:
    """The first 8 bytes of the SHA-256 of the ``carried`` matrices of ``base`` (in link order: name, shape, exact
    float64 bits): a d1 link's cells mean something only on the very numbers they were taken from."""
    digest = hashlib.sha256()
    for name in (n for n in NAMES if n in carried):
        arr = np.ascontiguousarray(base[name], dtype="<f8")
        digest.update(name.encode() + struct.pack(f">{arr.ndim}I", *arr.shape) + arr.tobytes())
    return digest.digest()[:_PRINT]


def changed_cells(edited: np.ndarray, base: np.ndarray) -> np.ndarray:
    """The flat positions where ``edited`` differs from ``base`` (same shape) by its exact bits: -0.0 is not 0.0."""
    a, b = (np.ascontiguousarray(m, dtype=np.float64) for m in (edited, base))
    return np.flatnonzero(a.view(np.int64) != b.view(np.int64))  # (k,)


def encode_diff(edits: Mapping[str, np.ndarray], base: Mapping[str, np.ndarray]) -> str:
    """Pack the cells of ``edits`` (name -> array) that differ from ``base`` (name -> the array of the same shape
    the link rebuilds) into a URL-safe token: their positions and exact float64 bits. Raises AttentionError as
    :func:`encode_edits` does, and when more than :data:`MAX_LINK_CELLS` cells differ in total."""
    parts, total = [b""], 0
    for index, name in enumerate(NAMES):
        if name not in edits:
            continue
        arr, was = np.asarray(edits[name], dtype=np.float64), np.asarray(base[name], dtype=np.float64)
        if arr.shape != was.shape or not 1 <= arr.ndim <= MAX_NDIM or max(arr.shape) > 0xFFFF:
            raise AttentionError(f"{name} has shape {arr.shape}; its link is made against {was.shape}", matrix=name)
        if not np.isfinite(arr).all():
            raise AttentionError(
                f"{name} has a value that is NaN or infinite; only finite numbers go in a link", matrix=name
            )
        changed = changed_cells(arr, was)  # (k,)
        total += changed.size
        if total > MAX_LINK_CELLS:
            raise AttentionError(
                f"the edits change more than {MAX_LINK_CELLS} numbers, too many for a link; download the preset "
                "file to share them",
                matrix="link",
            )
        parts.append(struct.pack(">BB", index, arr.ndim) + struct.pack(f">{arr.ndim}HI", *arr.shape, changed.size))
        parts.append(changed.astype(">u4").tobytes() + arr.ravel()[changed].astype("<f8").tobytes())
    parts[0] = bytes([len(parts) // 2]) + base_fingerprint(base, [n for n in NAMES if n in edits])
    return DIFF.seal(b"".join(parts))


def decode_diff(token: str, base: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The exact inverse of :func:`encode_diff`: name -> a new float64 array, ``base``'s with the link's cells put
    in. Refuses, as :func:`decode_edits` does, a changed or cut token, a matrix named twice or not in ``base``, a
    shape other than ``base``'s, positions out of range or not increasing, non-finite values, too many cells."""
    payload = DIFF.open(token)
    if not payload:
        raise _fail("it is empty")
    count, pos, out, total = payload[0], 1 + _PRINT, {}, 0
    if count > len(NAMES):
        raise _fail(f"it claims {count} matrices; a link carries at most {len(NAMES)}")
    if len(payload) < pos:
        raise _fail("it ends before its fingerprint of the starting numbers")
    for _ in range(count):
        name, shape, k, pos = _diff_header(payload, pos, out, base)
        total += k
        if total > MAX_LINK_CELLS:
            raise _fail(f"it changes more than {MAX_LINK_CELLS} numbers, more than a link may carry")
        end = pos + 12 * k
        if end > len(payload):
            raise _fail(f"{name} should change {k} numbers but the data stops early")
        where = np.frombuffer(payload, dtype=">u4", count=k, offset=pos).astype(np.int64)  # (k,)
        values = np.frombuffer(payload, dtype="<f8", count=k, offset=pos + 4 * k).astype(np.float64)  # (k,)
        pos = end
        if k and (where[-1] >= int(np.prod(shape)) or np.any(np.diff(where) <= 0)):
            raise _fail(f"{name}'s changed cells are out of range or out of order")
        if not np.isfinite(values).all():
            raise _fail(f"{name} holds a value that is NaN or infinite")
        arr = np.array(base[name], dtype=np.float64)  # a new, writable copy
        arr.ravel()[where] = values
        out[name] = arr
    if pos != len(payload):
        raise _fail(f"it has {len(payload) - pos} unexpected bytes after the matrices")
    if payload[1 : 1 + _PRINT] != base_fingerprint(base, list(out)):
        raise _fail(
            "it was made from other starting numbers (a different version of the examples, or other sizes or seed); "
            "its changed cells would land on the wrong numbers, so nothing was changed"
        )
    return out


def _diff_header(
    payload: bytes, pos: int, seen: Mapping[str, np.ndarray], base: Mapping[str, np.ndarray]
) -> tuple[str, tuple[int, ...], int, int]:
    """One matrix's header in a diff: its name, shape, count of changed cells, and where its cells start."""
    if pos + 2 > len(payload):
        raise _fail("it ends in the middle of a matrix header")
    index, ndim = payload[pos], payload[pos + 1]
    if index >= len(NAMES) or NAMES[index] not in base:
        raise _fail(f"it names a matrix (number {index}) this state does not have")
    name = NAMES[index]
    if name in seen:
        raise _fail(f"it holds {name} twice")
    if not 1 <= ndim <= MAX_NDIM or pos + 2 + 2 * ndim + 4 > len(payload):
        raise _fail(f"{name}'s header is cut short or has {ndim} dimensions")
    *shape, k = struct.unpack_from(f">{ndim}HI", payload, pos + 2)
    if tuple(shape) != np.shape(base[name]):
        got, want = " × ".join(map(str, shape)), " × ".join(map(str, np.shape(base[name])))
        raise _fail(f"its {name} is {got} but the current {name} is {want}; the link was made for other sizes")
    return name, tuple(shape), k, pos + 2 + 2 * ndim + 4


def decode_any(token: str, base: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Edits in either format: a difference from ``base`` (d1) or whole matrices checked against its shapes (v1)."""
    if isinstance(token, str) and token.strip().startswith(DIFF_VERSION + "."):
        return decode_diff(token, base)
    return decode_edits(token, expected_shapes={n: np.shape(m) for n, m in base.items()})


SHORT_TOKEN = 256  # characters: whole matrices this short are kept as they are (the form older links hold)


def encode_shortest(edits: Mapping[str, np.ndarray], base: Mapping[str, np.ndarray]) -> str:
    """``edits`` against ``base`` as a link token: whole matrices (v1) when that token is short (so a link made
    before the difference format is written back as it was), else the shorter of the two (the difference when
    few cells changed); raises AttentionError only when neither can carry them."""
    tokens, errors = [], []
    for make in (lambda: encode_edits(edits), lambda: encode_diff(edits, base)):
        try:
            tokens.append(make())
        except AttentionError as exc:
            errors.append(exc)
    if not tokens:
        raise errors[0]
    if tokens[0].startswith(VERSION + ".") and len(tokens[0]) <= SHORT_TOKEN:
        return tokens[0]
    return min(tokens, key=len)
