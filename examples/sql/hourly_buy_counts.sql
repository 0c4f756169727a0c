-- Hourly buy counts: the classic Flink SQL demo's first chart, as a tumbling event-time window.
-- Run from the repository's root: strom run examples/sql/hourly_buy_counts.sql  (or strom sql -f ...)
-- Input: examples/sql/data (python examples/sql/generate_data.py writes it); output: /tmp/strom-sql-demo/.
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

CREATE TABLE buy_cnt_per_hour (
    hour_of_day BIGINT,
    buy_cnt BIGINT
) WITH (
    'connector' = 'filesystem',
    'path' = '/tmp/strom-sql-demo/buy_cnt_per_hour',
    'format' = 'csv'
);

INSERT INTO buy_cnt_per_hour
SELECT HOUR(window_start), COUNT(*)
FROM TABLE(TUMBLE(TABLE user_behavior, DESCRIPTOR(ts), INTERVAL '1' HOUR))
WHERE behavior = 'buy'
GROUP BY window_start, window_end;
