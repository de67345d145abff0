"""`GET /proofs/{address}` (provable streams, issue 16): a chunk's inclusion proof in this node's
bin log, the document `swarm prove` prints and `swarm verify-proof` checks (swarm/proof_document.py)."""

from __future__ import annotations

from typing import Protocol

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from swarm.proof_document import InclusionProof, proof_json
from swarm.proofs import NotInLog

__all__ = ["ProofSource", "proof_routes"]


class ProofSource(Protocol):
    async def prove(self, address: bytes) -> InclusionProof: ...


def proof_routes(proofs: ProofSource) -> list[Route]:
    async def proof(request: Request) -> Response:
        text = request.path_params["address"]
        try:
            address = bytes.fromhex(text)
        except ValueError:
            address = b""
        if len(address) != 32:
            return JSONResponse({"code": 400, "message": f"not a chunk address: {text!r}"}, status_code=400)
        try:
            found = await proofs.prove(address)
        except NotInLog as exc:
            return JSONResponse({"code": 404, "message": str(exc)}, status_code=404)
        return JSONResponse(proof_json(found))

    return [Route("/proofs/{address}", proof, methods=["GET"])]
