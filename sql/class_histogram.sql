-- Class-size histograms of every node in a frequency-set table: per node and
-- (class size, distinct sensitive values) the number of classes; per QI the sum
-- of size * (leaves under the class's value - 1), from which glm follows
-- exactly; the records not of their class's majority label (for cm); and the
-- sum of each class's squared sensitive-value counts (for the sl spread).
-- Only these histograms cross into Rust. The leaf sums are looked up only for
-- classes of at least {{min_size}} records: a search with a fixed k needs none
-- for classes it suppresses, and near the bottom of the lattice those are
-- almost all of them.
-- A frequency set without sensitive or label codes has one row per class
-- already ({{size}} = p.cnt, no {{group_by}}); otherwise its rows are summed
-- per class. With per-class models (entropy or recursive l, t-closeness),
-- each class's (value, records) list of the model's column is selected and
-- grouped by too: kanon judges each list, then sums the rows into buckets.
WITH sized AS (
    SELECT p.node, {{groups}}, {{size}}::BIGINT AS size, {{ldiv}}::BIGINT AS ldiv
    FROM {{source}} p
    {{group_by}}
), classes AS (
    SELECT c.*{{glm}}
    FROM sized c JOIN kanon_kids k ON k.child = c.node {{leaf_joins}}
    WHERE c.size >= {{min_size}}
    UNION ALL
    SELECT c.*{{zeros}}
    FROM sized c
    WHERE c.size < {{min_size}}
){{label_cte}}{{squares_cte}}{{lists_cte}}
SELECT c.node, c.size, c.ldiv, count(*)::BIGINT AS classes{{glm_totals}}, {{minority}}::BIGINT AS minority,
    {{squares}}::BIGINT AS squares{{lists}}
FROM classes c {{label_join}} {{squares_join}} {{lists_join}}
{{group}}
