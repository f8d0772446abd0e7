"""torchrun (torch.distributed.run, torch's own launcher), usable with Debian 12's torch 1.13 on Python 3.11.

    python3 -m msccl.torchrun --standalone --nproc_per_node=4 train.py   # as `torchrun ...`

That torch's Std.from_str("0") returns None on Python 3.11 (Flag iteration no longer yields the
zero member nor multi-bit aliases), so every torchrun with the default --redirects/--tee fails
before starting a worker ("'NoneType' object has no attribute 'get'"). When (and only when) the
installed torch has that defect, Std.from_str is replaced by one that converts with Std(int);
then torch.distributed.run's main() runs with the command line unchanged. Newer torch: untouched.
"""
import re
import sys

from torch.distributed.elastic.multiprocessing import api as _api

if _api.Std.from_str("0") is None:
    def _from_str(cls, vm):
        if re.match(_api._VALUE_REGEX, vm):
            return cls(int(vm))
        if re.match(_api._MAPPING_REGEX, vm):
            return {int(i): cls(int(v)) for i, v in (m.split(":") for m in vm.split(","))}
        raise ValueError(f"{vm} does not match {_api._VALUE_REGEX} or {_api._MAPPING_REGEX}")

    _api.Std.from_str = classmethod(_from_str)

from torch.distributed.run import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
