"""Memory readings: the sampler keeps the peak of a process, and survives the process ending."""

from __future__ import annotations

import subprocess
import sys
import time

from quantgate.evaluate._memory_sampler import RssSampler


def test_a_process_that_ends_while_sampled_leaves_its_peak_so_far():
    """A local server that goes down mid-run: no exception, the samples taken while it ran."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with RssSampler(pid=process.pid, interval=0.02) as sampler:
            time.sleep(0.2)
            taken = sampler.samples
            process.kill()
            process.wait()
            time.sleep(0.2)
        assert sampler.ended
        assert taken >= 2
        assert sampler.samples in (taken, taken + 1)  # none after the process was gone
        assert sampler.peak_mb is not None
        assert sampler.peak_mb > 1
    finally:
        process.kill()


def test_this_process_is_sampled_until_the_block_ends():
    with RssSampler(interval=0.01) as sampler:
        time.sleep(0.1)
    assert not sampler.ended
    assert sampler.samples >= 3
    assert sampler.start_mb is not None
    assert sampler.peak_mb is not None
    assert sampler.peak_mb >= sampler.start_mb
