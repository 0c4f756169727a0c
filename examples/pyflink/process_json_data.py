"""JSON strings parsed, filtered and updated in plain map/filter functions; records printed as Python prints them."""

import json

from pyflink.datastream import StreamExecutionEnvironment

ORDERS = [
    '{"id": 1, "customer": "ada", "items": [{"sku": "a", "qty": 2}], "country": "UK"}',
    '{"id": 2, "customer": "bo", "items": [{"sku": "b", "qty": 1}, {"sku": "c", "qty": 4}], "country": "SE"}',
    '{"id": 3, "customer": "cy", "items": [], "country": "UK"}',
]


def add_quantity(order):
    order["quantity"] = sum(item["qty"] for item in order["items"])
    return order


def process_json_data():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    ds = env.from_collection(ORDERS)
    (
        ds.map(lambda line: json.loads(line))
        .filter(lambda order: order["items"])
        .map(add_quantity)
        .map(lambda order: {"id": order["id"], "customer": order["customer"], "quantity": order["quantity"]})
        .print()
    )
    env.execute("process_json_data")


if __name__ == "__main__":
    process_json_data()
