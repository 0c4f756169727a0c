-- Top categories: the demo's third chart. Buys per category and day (a tumbling window), joined with the
-- category dimension table for the names, the three best of each day kept (window Top-N).
-- Run from the repository's root: strom run examples/sql/top_categories.sql
CREATE TABLE user_behavior (
    user_id BIGINT,
    item_id BIGINT,
    category_id BIGINT,
    behavior STRING,
    ts TIMESTAMP(3),
    WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH (
    'connector' = 'filesystem',
    'path' = 'examples/sql/data/user_behavior',
    'format' = 'csv'
);

CREATE TABLE category_dim (
    category_id BIGINT,
    category_name STRING
) WITH (
    'connector' = 'filesystem',
    'path' = 'examples/sql/data/category',
    'format' = 'csv'
);

CREATE TABLE top_categories (
    day_start TIMESTAMP(3),
    category_name STRING,
    buy_cnt BIGINT
) WITH (
    'connector' = 'filesystem',
    'path' = '/tmp/strom-sql-demo/top_categories',
    'format' = 'csv'
);

CREATE VIEW daily_category_buys AS
SELECT window_start, window_end, category_id, COUNT(*) AS buy_cnt
FROM TABLE(TUMBLE(TABLE user_behavior, DESCRIPTOR(ts), INTERVAL '1' DAY))
WHERE behavior = 'buy'
GROUP BY window_start, window_end, category_id;

CREATE VIEW top3 AS
SELECT window_start, category_id, buy_cnt
FROM (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY buy_cnt DESC) AS rownum
    FROM daily_category_buys
)
WHERE rownum <= 3;

INSERT INTO top_categories
SELECT t.window_start, c.category_name, t.buy_cnt
FROM top3 AS t
JOIN category_dim AS c ON t.category_id = c.category_id;
