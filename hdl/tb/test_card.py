"""cocotb tests of the card's RTL (hdl/rtl, top tb_card.sv): every scenario of
scenarios.py that runs on this build (FGDR_BUILD), once per interrupt mode it names,
as tests called <scenario>_<mode>."""
import resource

import cocotb

from bench import Bench, Config
from scenarios import SCENARIOS


def _make(sc, mode):
    async def run(dut):
        bench = Bench(dut, mode)
        cpu = resource.getrusage(resource.RUSAGE_SELF)
        try:
            await sc.run(bench, mode)
        finally:
            now = resource.getrusage(resource.RUSAGE_SELF)
            dut._log.info("%s_%s: %.1f s of CPU", sc.name, mode,
                          now.ru_utime + now.ru_stime - cpu.ru_utime - cpu.ru_stime)

    run.__name__ = run.__qualname__ = f"{sc.name}_{mode}"
    run.__doc__ = sc.run.__doc__
    return cocotb.test(timeout_time=sc.timeout_ms, timeout_unit="ms")(run)


_build = Config.from_env().build
for _sc in SCENARIOS:
    if _build in _sc.builds:
        for _mode in _sc.modes:
            _t = _make(_sc, _mode)
            globals()[_t.__name__] = _t
