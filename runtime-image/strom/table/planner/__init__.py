"""The planner: logical plans (plan.py) from the Table API and SQL, scalar expressions compiled to Python
functions (scalar.py), group aggregation (group_agg.py), and translation onto DataStream operators
(translate.py)."""
