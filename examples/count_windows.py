"""Count windows: sums over every 3 orders of a customer (tumbling) and over the last 4
orders every 2 (sliding), as PyFlink's count_window(size[, slide]).

    strom run examples/count_windows.py
"""

from strom.datastream import StreamExecutionEnvironment

# (customer, amount)
ORDERS = [("c1", 1), ("c1", 2), ("c2", 10), ("c1", 4), ("c1", 9), ("c2", 20), ("c1", 7), ("c1", 3), ("c1", 5)]


def main() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    orders = env.from_collection(ORDERS).key_by(lambda o: o[0])
    orders.count_window(3).reduce(lambda a, b: (a[0], a[1] + b[1])).map(lambda o: f"tumbling(3) {o[0]}: {o[1]}").print()
    orders.count_window(4, 2).reduce(lambda a, b: (a[0], a[1] + b[1])).map(
        lambda o: f"sliding(4, 2) {o[0]}: {o[1]}"
    ).print()
    env.execute("count windows")


if __name__ == "__main__":
    main()
