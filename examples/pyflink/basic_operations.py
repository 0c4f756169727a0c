"""Rows through map, filter, key_by and reduce; printed as PyFlink prints Types.ROW records, e.g. +I[ada, 30]."""

from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment

PEOPLE = [("ada", "London", 30), ("bo", "Malmo", 17), ("cy", "London", 45), ("di", "Malmo", 22), ("ed", "Oslo", 9)]


def basic_operations():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    person = Types.ROW_NAMED(["name", "city", "age"], [Types.STRING(), Types.STRING(), Types.INT()])
    ds = env.from_collection(PEOPLE, type_info=person)
    adults = ds.filter(lambda p: p.age >= 18)
    per_city = adults.map(
        lambda p: Row(p.city, 1, p.age),
        output_type=Types.ROW_NAMED(["city", "adults", "total_age"], [Types.STRING(), Types.INT(), Types.INT()]),
    )
    (
        per_city.key_by(lambda r: r.city)
        .reduce(lambda a, b: Row(a.city, a.adults + b.adults, a.total_age + b.total_age))
        .print()
    )
    env.execute("basic_operations")


if __name__ == "__main__":
    basic_operations()
