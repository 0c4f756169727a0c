"""`SlotSharingGroup` (`pyflink.datastream.slot_sharing_group`): a named group of operators and its resources.

Strom schedules slot sharing groups by name, as Flink does: `ds.slot_sharing_group(group)` (a name or
a SlotSharingGroup) puts the operator in the group, operators of one group share slots (a job needs
the sum over its groups of each group's highest parallelism), and operators of different groups are
never chained. The resource profile (CPU cores, heap/off-heap/managed memory, external resources) of
Flink's fine-grained resource management is recorded and read back, but Strom's slots are uniform
processes: it does not size slots by it.
"""

from __future__ import annotations


class MemorySize:
    """A number of bytes, with Flink's MemorySize accessors."""

    def __init__(self, bytes_size: int) -> None:
        if isinstance(bytes_size, bool) or not isinstance(bytes_size, int) or bytes_size < 0:
            raise ValueError(f"a memory size is a number of bytes >= 0, got {bytes_size!r}")
        self._bytes = bytes_size

    @staticmethod
    def of_mebi_bytes(mebi_bytes: int) -> MemorySize:
        return MemorySize(int(mebi_bytes) << 20)

    def get_bytes(self) -> int:
        return self._bytes

    def get_kibi_bytes(self) -> int:
        return self._bytes >> 10

    def get_mebi_bytes(self) -> int:
        return self._bytes >> 20

    def get_gibi_bytes(self) -> int:
        return self._bytes >> 30

    def get_tebi_bytes(self) -> int:
        return self._bytes >> 40

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MemorySize) and other._bytes == self._bytes

    def __hash__(self) -> int:
        return hash(self._bytes)

    def __lt__(self, other: MemorySize) -> bool:
        return self._bytes < other._bytes

    def __repr__(self) -> str:
        return f"MemorySize({self._bytes} bytes)"


class SlotSharingGroup:
    def __init__(
        self,
        name: str,
        *,
        cpu_cores: float | None = None,
        task_heap_memory: MemorySize | None = None,
        task_off_heap_memory: MemorySize | None = None,
        managed_memory: MemorySize | None = None,
        external_resources: dict[str, float] | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"a slot sharing group needs a non-empty name, got {name!r}")
        self._name = name
        self._cpu_cores = cpu_cores
        self._task_heap_memory = task_heap_memory
        self._task_off_heap_memory = task_off_heap_memory
        self._managed_memory = managed_memory
        self._external_resources = dict(external_resources or {})

    @staticmethod
    def builder(name: str) -> SlotSharingGroup.Builder:
        return SlotSharingGroup.Builder(name)

    def get_name(self) -> str:
        return self._name

    def get_cpu_cores(self) -> float | None:
        return self._cpu_cores

    def get_task_heap_memory(self) -> MemorySize | None:
        return self._task_heap_memory

    def get_task_off_heap_memory(self) -> MemorySize | None:
        return self._task_off_heap_memory

    def get_managed_memory(self) -> MemorySize | None:
        return self._managed_memory

    def get_external_resources(self) -> dict[str, float]:
        return dict(self._external_resources)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SlotSharingGroup) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash(self._name)

    def __repr__(self) -> str:
        return f"SlotSharingGroup({self._name!r})"

    class Builder:
        """Flink's builder: a name, then optionally every resource (CPU cores and task heap memory together)."""

        def __init__(self, name: str) -> None:
            self._name = name
            self._cpu_cores: float | None = None
            self._heap: MemorySize | None = None
            self._off_heap: MemorySize | None = None
            self._managed: MemorySize | None = None
            self._external: dict[str, float] = {}

        def set_cpu_cores(self, cpu_cores: float) -> SlotSharingGroup.Builder:
            if cpu_cores <= 0:
                raise ValueError(f"cpu_cores must be > 0, got {cpu_cores!r}")
            self._cpu_cores = float(cpu_cores)
            return self

        def set_task_heap_memory(self, task_heap_memory: MemorySize) -> SlotSharingGroup.Builder:
            if task_heap_memory.get_bytes() <= 0:
                raise ValueError("task heap memory must be > 0")
            self._heap = task_heap_memory
            return self

        def set_task_heap_memory_mb(self, task_heap_memory_mb: int) -> SlotSharingGroup.Builder:
            return self.set_task_heap_memory(MemorySize.of_mebi_bytes(task_heap_memory_mb))

        def set_task_off_heap_memory(self, task_off_heap_memory: MemorySize) -> SlotSharingGroup.Builder:
            self._off_heap = task_off_heap_memory
            return self

        def set_task_off_heap_memory_mb(self, task_off_heap_memory_mb: int) -> SlotSharingGroup.Builder:
            return self.set_task_off_heap_memory(MemorySize.of_mebi_bytes(task_off_heap_memory_mb))

        def set_managed_memory(self, managed_memory: MemorySize) -> SlotSharingGroup.Builder:
            self._managed = managed_memory
            return self

        def set_managed_memory_mb(self, managed_memory_mb: int) -> SlotSharingGroup.Builder:
            return self.set_managed_memory(MemorySize.of_mebi_bytes(managed_memory_mb))

        def set_external_resource(self, name: str, value: float) -> SlotSharingGroup.Builder:
            self._external[name] = float(value)
            return self

        def build(self) -> SlotSharingGroup:
            """Flink: CPU cores and task heap memory are given together or not at all."""
            if (self._cpu_cores is None) != (self._heap is None):
                raise ValueError(
                    f"slot sharing group {self._name!r}: set both cpu cores and task heap memory, or neither "
                    "(Flink's rule for a resource profile)"
                )
            return SlotSharingGroup(
                self._name,
                cpu_cores=self._cpu_cores,
                task_heap_memory=self._heap,
                task_off_heap_memory=self._off_heap,
                managed_memory=self._managed,
                external_resources=self._external,
            )
