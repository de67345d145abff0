"""`GET /proofs/{address}` (provable streams, issue 16): a chunk's inclusion proof in this node's
bin log, the document `swarm prove` prints and `swarm verify-proof` checks (swarm/proofs/document.py)."""

from __future__ import annotations

from typing import Protocol

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from swarm.api.input import error_response, handled, parse_address
from swarm.proofs.document import InclusionProof, proof_json
from swarm.proofs.service import NotInLog

__all__ = ["ProofSource", "proof_routes"]


class ProofSource(Protocol):
    async def prove(self, address: bytes) -> InclusionProof: ...


def proof_routes(proofs: ProofSource) -> list[Route]:
    async def proof(request: Request) -> Response:
        address = parse_address(request.path_params["address"])
        try:
            found = await proofs.prove(address)
        except NotInLog as exc:
            return error_response(404, str(exc))
        return JSONResponse(proof_json(found))

    return [Route("/proofs/{address}", handled(proof), methods=["GET"])]
