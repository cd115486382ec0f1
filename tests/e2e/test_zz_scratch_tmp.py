import pytest, trio
from pathlib import Path
from tests.e2e.test_providers_e2e import *  # noqa
from tests.e2e import test_providers_e2e as t

@pytest.mark.parametrize("which", ["malformed", "truncate"])
async def test_one(tmp_path: Path, which: str) -> None:
    dialect = t.DIALECTS[0]
    async with t.open_sse_server() as server:
        if which == "malformed":
            server.push(t.Script(chunks=[*dialect.partial("x"), b"data: {this is not json\n\n"]))
        else:
            server.push(t.Script(chunks=dialect.partial("cut"), truncate=True))
        async with t.provider_gateway(tmp_path, t.provider_config(dialect, server)) as gw:
            with trio.fail_after(20):
                async with t.open_client(gw) as client:
                    with pytest.raises(t.GatewayRequestError):
                        await client.request("agent", {"message": "m", "idempotencyKey": "bad"}, expect_final=True)
