"""The Nexmark SQL queries q0-q22 as Flink's Nexmark defines them (nexmark-flink's queries/*.sql: the
SELECT of each `INSERT INTO nexmark_qN ...`), over the `datagen` table and the person/auction/bid views
of the nexmark connector (strom.table.connectors.nexmark). Extra statements a query needs (q13's side
input, q14's function) are in SETUP; `{side_input}` is filled in by the benchmark."""

from __future__ import annotations

QUERIES: dict[str, str] = {
    "q0": "SELECT auction, bidder, price, dateTime, extra FROM bid",
    "q1": "SELECT auction, bidder, 0.908 * price as price, dateTime, extra FROM bid",
    "q2": "SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0",
    "q3": """SELECT P.name, P.city, P.state, A.id
        FROM auction AS A INNER JOIN person AS P on A.seller = P.id
        WHERE A.category = 10 and (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA')""",
    "q4": """SELECT Q.category, AVG(Q.final)
        FROM (
            SELECT MAX(B.price) AS final, A.category
            FROM auction A, bid B
            WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
            GROUP BY A.id, A.category
        ) Q
        GROUP BY Q.category""",
    "q5": """SELECT AuctionBids.auction, AuctionBids.num
        FROM (
            SELECT auction, count(*) AS num, window_start AS starttime, window_end AS endtime
            FROM TABLE(HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
            GROUP BY auction, window_start, window_end
        ) AS AuctionBids
        JOIN (
            SELECT max(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime
            FROM (
                SELECT count(*) AS num, window_start AS starttime, window_end AS endtime
                FROM TABLE(HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
                GROUP BY auction, window_start, window_end
            ) AS CountBids
            GROUP BY CountBids.starttime, CountBids.endtime
        ) AS MaxBids
        ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime
           AND AuctionBids.num >= MaxBids.maxn""",
    "q6": """SELECT Q.seller, AVG(Q.final) OVER
            (PARTITION BY Q.seller ORDER BY Q.dateTime ROWS BETWEEN 10 PRECEDING AND CURRENT ROW)
        FROM (
            SELECT MAX(B.price) AS final, A.seller, B.dateTime
            FROM auction AS A, bid AS B
            WHERE A.id = B.auction and B.dateTime between A.dateTime and A.expires
            GROUP BY A.id, A.seller
        ) AS Q""",
    "q7": """SELECT B.auction, B.price, B.bidder, B.dateTime, B.extra
        from bid B
        JOIN (
            SELECT MAX(price) AS maxprice, window_end as dateTime
            FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
            GROUP BY window_start, window_end
        ) B1
        ON B.price = B1.maxprice
        WHERE B.dateTime BETWEEN B1.dateTime - INTERVAL '10' SECOND AND B1.dateTime""",
    "q8": """SELECT P.id, P.name, P.starttime
        FROM (
            SELECT id, name, window_start AS starttime, window_end AS endtime
            FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
            GROUP BY id, name, window_start, window_end
        ) P
        JOIN (
            SELECT seller, window_start AS starttime, window_end AS endtime
            FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
            GROUP BY seller, window_start, window_end
        ) A
        ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime""",
    "q9": """SELECT id, itemName, description, initialBid, reserve, dateTime, expires, seller, category, extra,
            auction, bidder, price, bid_dateTime, bid_extra
        FROM (
            SELECT A.*, B.auction, B.bidder, B.price, B.dateTime AS bid_dateTime, B.extra AS bid_extra,
                ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.dateTime ASC) AS rownum
            FROM auction A, bid B
            WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
        )
        WHERE rownum <= 1""",
    "q10": """SELECT auction, bidder, price, dateTime, extra, DATE_FORMAT(dateTime, 'yyyy-MM-dd'),
            DATE_FORMAT(dateTime, 'HH:mm')
        FROM bid""",
    "q11": """SELECT B.bidder, count(*) as bid_count, SESSION_START(B.dateTime, INTERVAL '10' SECOND) as starttime,
            SESSION_END(B.dateTime, INTERVAL '10' SECOND) as endtime
        FROM bid B
        GROUP BY B.bidder, SESSION(B.dateTime, INTERVAL '10' SECOND)""",
    "q12": """SELECT B.bidder, count(*) as bid_count, TUMBLE_START(B.p_time, INTERVAL '10' SECOND) as starttime,
            TUMBLE_END(B.p_time, INTERVAL '10' SECOND) as endtime
        FROM (SELECT *, PROCTIME() as p_time FROM bid) B
        GROUP BY B.bidder, TUMBLE(B.p_time, INTERVAL '10' SECOND)""",
    "q13": """SELECT B.auction, B.bidder, B.price, B.dateTime, S.`value`
        FROM (SELECT *, PROCTIME() as p_time FROM bid) B
        JOIN side_input FOR SYSTEM_TIME AS OF B.p_time AS S
        ON mod(B.auction, 10000) = S.key""",
    "q14": """SELECT auction, bidder, 0.908 * price as price,
            CASE
                WHEN HOUR(dateTime) >= 8 AND HOUR(dateTime) <= 18 THEN 'dayTime'
                WHEN HOUR(dateTime) <= 6 OR HOUR(dateTime) >= 20 THEN 'nightTime'
                ELSE 'otherTime'
            END AS bidTimeType,
            dateTime, extra, count_char(extra, 'c') AS c_counts
        FROM bid
        WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000""",
    "q15": """SELECT DATE_FORMAT(dateTime, 'yyyy-MM-dd') as `day`,
            count(*) AS total_bids,
            count(*) filter (where price < 10000) AS rank1_bids,
            count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
            count(*) filter (where price >= 1000000) AS rank3_bids,
            count(distinct bidder) AS total_bidders,
            count(distinct bidder) filter (where price < 10000) AS rank1_bidders,
            count(distinct bidder) filter (where price >= 10000 and price < 1000000) AS rank2_bidders,
            count(distinct bidder) filter (where price >= 1000000) AS rank3_bidders,
            count(distinct auction) AS total_auctions,
            count(distinct auction) filter (where price < 10000) AS rank1_auctions,
            count(distinct auction) filter (where price >= 10000 and price < 1000000) AS rank2_auctions,
            count(distinct auction) filter (where price >= 1000000) AS rank3_auctions
        FROM bid
        GROUP BY DATE_FORMAT(dateTime, 'yyyy-MM-dd')""",
    "q16": """SELECT channel, DATE_FORMAT(dateTime, 'yyyy-MM-dd') as `day`,
            max(DATE_FORMAT(dateTime, 'HH:mm')) as `minute`,
            count(*) AS total_bids,
            count(*) filter (where price < 10000) AS rank1_bids,
            count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
            count(*) filter (where price >= 1000000) AS rank3_bids,
            count(distinct bidder) AS total_bidders,
            count(distinct bidder) filter (where price < 10000) AS rank1_bidders,
            count(distinct bidder) filter (where price >= 10000 and price < 1000000) AS rank2_bidders,
            count(distinct bidder) filter (where price >= 1000000) AS rank3_bidders,
            count(distinct auction) AS total_auctions,
            count(distinct auction) filter (where price < 10000) AS rank1_auctions,
            count(distinct auction) filter (where price >= 10000 and price < 1000000) AS rank2_auctions,
            count(distinct auction) filter (where price >= 1000000) AS rank3_auctions
        FROM bid
        GROUP BY channel, DATE_FORMAT(dateTime, 'yyyy-MM-dd')""",
    "q17": """SELECT auction, DATE_FORMAT(dateTime, 'yyyy-MM-dd') as `day`,
            count(*) AS total_bids,
            count(*) filter (where price < 10000) AS rank1_bids,
            count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
            count(*) filter (where price >= 1000000) AS rank3_bids,
            min(price) AS min_price,
            max(price) AS max_price,
            avg(price) AS avg_price,
            sum(price) AS sum_price
        FROM bid
        GROUP BY auction, DATE_FORMAT(dateTime, 'yyyy-MM-dd')""",
    "q18": """SELECT auction, bidder, price, channel, url, dateTime, extra
        FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY dateTime DESC) AS rank_number
              FROM bid)
        WHERE rank_number <= 1""",
    "q19": """SELECT * FROM
        (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number FROM bid)
        WHERE rank_number <= 10""",
    "q20": """SELECT auction, bidder, price, channel, url, B.dateTime, B.extra,
            itemName, description, initialBid, reserve, A.dateTime, expires, seller, category, A.extra
        FROM bid AS B INNER JOIN auction AS A on B.auction = A.id
        WHERE A.category = 10""",
    "q21": """SELECT auction, bidder, price, channel,
            CASE
                WHEN lower(channel) = 'apple' THEN '0'
                WHEN lower(channel) = 'google' THEN '1'
                WHEN lower(channel) = 'facebook' THEN '2'
                WHEN lower(channel) = 'baidu' THEN '3'
                ELSE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2)
            END AS channel_id
        FROM bid
        where REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) is not null or
              lower(channel) in ('apple', 'google', 'facebook', 'baidu')""",
    "q22": """SELECT auction, bidder, price, channel,
            SPLIT_INDEX(url, '/', 3) as dir1,
            SPLIT_INDEX(url, '/', 4) as dir2,
            SPLIT_INDEX(url, '/', 5) as dir3
        FROM bid""",
}

SETUP: dict[str, list[str]] = {
    # nexmark-flink reads side_input.txt (key, value) through the filesystem connector
    "q13": ["CREATE TABLE side_input (key BIGINT, `value` VARCHAR) WITH ('connector' = 'filesystem', "
            "'path' = '{side_input}', 'format' = 'csv')"],
    # nexmark-flink's CountChar UDF, as a Python function
    "q14": ["CREATE FUNCTION count_char AS 'benchmarks.nexmark_sql.count_char' LANGUAGE PYTHON"],
}
