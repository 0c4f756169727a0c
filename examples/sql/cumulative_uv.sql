-- Cumulative unique visitors of the day, every 10 minutes: the demo's second chart, with Flink's
-- CUMULATE window (a growing window from midnight, emitted every 10 minutes).
-- Run from the repository's root: strom run examples/sql/cumulative_uv.sql
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

CREATE TABLE cumulative_uv (
    time_str STRING,
    uv BIGINT
) WITH (
    'connector' = 'filesystem',
    'path' = '/tmp/strom-sql-demo/cumulative_uv',
    'format' = 'csv'
);

INSERT INTO cumulative_uv
SELECT DATE_FORMAT(window_end, 'HH:mm'), COUNT(DISTINCT user_id)
FROM TABLE(CUMULATE(TABLE user_behavior, DESCRIPTOR(ts), INTERVAL '10' MINUTES, INTERVAL '1' DAY))
GROUP BY window_start, window_end;
