"""Keyed state: a running fraud check per account with ValueState, ListState and MapState.

Flags an account when a transaction is more than 3x its running average, keeping the
last three amounts and a count per merchant.

    strom run examples/state_access.py
"""

from strom.common import Types
from strom.datastream import KeyedProcessFunction, RuntimeContext, StreamExecutionEnvironment
from strom.datastream.state import ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor

# (account, merchant, amount)
TRANSACTIONS = [
    ("acc-1", "books", 12.0), ("acc-2", "food", 30.0), ("acc-1", "food", 9.5),
    ("acc-1", "books", 11.0), ("acc-2", "food", 28.0), ("acc-1", "travel", 410.0),
    ("acc-2", "games", 31.0), ("acc-2", "travel", 95.0), ("acc-1", "food", 10.0),
]


class FraudCheck(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.stats = runtime_context.get_state(ValueStateDescriptor("stats", Types.PICKLED_BYTE_ARRAY()))
        self.recent = runtime_context.get_list_state(ListStateDescriptor("recent", Types.DOUBLE()))
        self.per_merchant = runtime_context.get_map_state(
            MapStateDescriptor("per_merchant", Types.STRING(), Types.INT())
        )

    def process_element(self, value, ctx):
        _, merchant, amount = value
        count, total = self.stats.value() or (0, 0.0)
        if count and amount > 3 * total / count:
            yield f"ALERT {ctx.get_current_key()}: {amount:.2f} at {merchant} (average {total / count:.2f})"
        self.stats.update((count + 1, total + amount))
        self.recent.update((list(self.recent.get()) + [amount])[-3:])
        self.per_merchant.put(merchant, (self.per_merchant.get(merchant) or 0) + 1)
        yield (
            f"{ctx.get_current_key()}: n={count + 1} last3={list(self.recent.get())} "
            f"merchants={dict(sorted(self.per_merchant.items()))}"
        )


def main() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection(TRANSACTIONS).key_by(lambda t: t[0]).process(FraudCheck()).print()
    env.execute("state access")


if __name__ == "__main__":
    main()
