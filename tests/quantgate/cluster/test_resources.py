"""What a variant's Ray task declares, and the message when no node has it (no Ray needed)."""

from __future__ import annotations

import pytest

from quantgate.backends import BackendOptions, open_variant, registered_backend
from quantgate.cluster._resources import infeasible, task_resources, to_ray_options
from quantgate.inputs._variants import Variant

NODES = [
    {"Alive": True, "NodeManagerHostname": "small", "Resources": {"CPU": 4.0, "memory": 8 * 2**30}},
    {
        "Alive": True,
        "NodeManagerHostname": "big",
        "Resources": {"CPU": 16.0, "memory": 64 * 2**30, "ollama": 1.0},
    },
    {"Alive": False, "NodeManagerHostname": "gone", "Resources": {"CPU": 64.0, "GPU": 8.0}},
]


def test_an_embedded_variant_takes_a_whole_node_of_the_largest_size_and_memory_for_its_model():
    variant = Variant(name="q4", backend="llamacpp", model="q4.gguf", file_size_bytes=2**30)
    assert task_resources(variant, NODES) == {"CPU": 16.0, "memory": 1.5 * 2**30 + 512 * 2**20}


def test_an_embedded_variant_with_n_threads_takes_that_many_cpus():
    variant = Variant(name="q4", backend="llamacpp", model="q4.gguf", options={"n_threads": 2})
    assert task_resources(variant, NODES) == {"CPU": 2.0}  # no file size: no memory figure


def test_a_server_variant_takes_one_cpu_and_its_declared_resources_as_given():
    variant = Variant(
        name="q4", backend="ollama", model="gemma3:12b", resources={"ollama": 1, "memory": 2**30}
    )
    assert task_resources(variant, NODES) == {"ollama": 1.0, "memory": 2**30, "CPU": 1.0}


def test_declared_resources_win_over_the_defaults():
    variant = Variant(
        name="q4", backend="llamacpp", model="q4.gguf", file_size_bytes=2**30, resources={"CPU": 3}
    )
    assert task_resources(variant, NODES)["CPU"] == 3.0


def test_a_node_with_everything_makes_it_feasible():
    assert infeasible({"CPU": 8.0, "ollama": 1.0}, NODES) is None
    assert infeasible({"CPU": 4.0, "memory": 8 * 2**30}, NODES) is None


def test_no_single_node_with_everything_is_infeasible_naming_what_each_node_has():
    # CPU 8 is on "big" and GPU on the dead node only: no alive node has both
    why = infeasible({"CPU": 8.0, "GPU": 1.0}, NODES)
    assert why == (
        "no node of the Ray cluster has what its task declares (CPU 8, GPU 1); the nodes have: "
        "small: CPU 4, memory 8.0 GiB; big: CPU 16, memory 64.0 GiB, ollama 1"
    )


def test_without_alive_nodes_it_says_so():
    assert str(infeasible({"CPU": 1.0}, NODES[2:])).endswith("the nodes have: none alive")


@pytest.mark.parametrize(
    ("resources", "options"),
    [
        ({"CPU": 2.0}, {"num_cpus": 2.0, "resources": {}}),
        (
            {"CPU": 1.0, "GPU": 1.0, "memory": 100.0, "ollama": 1.0},
            {"num_cpus": 1.0, "num_gpus": 1.0, "memory": 100.0, "resources": {"ollama": 1.0}},
        ),
    ],
)
def test_resources_become_ray_task_options(resources, options):
    assert to_ray_options(resources) == options


def test_negative_resources_are_refused_naming_them():
    with pytest.raises(ValueError, match=r"resources must be numbers >= 0 \(GPU = -1.0\)"):
        Variant(name="q4", backend="ollama", model="m", resources={"GPU": -1})


class _WorkerOptions(BackendOptions):
    """A toy in-process backend whose threads are its `workers` option."""

    workers: int = 1

    def cpu_threads(self) -> int | None:
        return self.workers


def test_an_in_process_backend_declares_the_cpus_its_options_give():
    with registered_backend("workers", open_variant, options=_WorkerOptions):
        assert task_resources(Variant(name="w", backend="workers", options={"workers": 6}), NODES) == {
            "CPU": 6.0
        }
    with registered_backend("plain", open_variant):  # no model of its options: every CPU of the largest node
        assert task_resources(Variant(name="p", backend="plain", options={"n_threads": 6}), NODES) == {
            "CPU": 16.0
        }
