-- PostgreSQL's catalog, as kanon reads it (src/postgres.rs): where a name
-- resolves, a table's columns, what reads a table and what depends on it,
-- and what a replaced release carries over. Values are bound ($1, $2).
-- name: find
-- The relation a quoted name resolves to under the session's search_path.
SELECT c.oid, n.nspname::text, c.relname::text, c.relkind::text
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.oid = to_regclass($1)
-- name: regclass
SELECT to_regclass($1)::oid
-- name: current_schema
SELECT current_schema()::text
-- name: columns
-- A table's columns in order: name, type oid, type modifier.
SELECT attname::text, atttypid, atttypmod FROM pg_attribute
WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped ORDER BY attnum
-- name: type_name
SELECT format_type($1, $2)
-- name: reads
-- Does relation $1 read table $2: is it that table, or a view (at any depth) over it?
WITH RECURSIVE reads(oid) AS (
    SELECT $1::oid
    UNION
    SELECT d.refobjid FROM reads r
    JOIN pg_rewrite w ON w.ev_class = r.oid
    JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = w.oid
        AND d.refclassid = 'pg_class'::regclass AND d.refobjid <> r.oid
)
SELECT EXISTS (SELECT 1 FROM reads WHERE oid = $2)
-- name: dependents
-- What depends on table $1 from outside it (views, materialized views,
-- other tables' foreign keys, SQL functions…), described for messages.
SELECT DISTINCT CASE WHEN d.classid = 'pg_rewrite'::regclass THEN
    (SELECT CASE c.relkind WHEN 'm' THEN 'materialized view ' ELSE 'view ' END || c.oid::regclass::text
     FROM pg_rewrite w JOIN pg_class c ON c.oid = w.ev_class WHERE w.oid = d.objid)
    ELSE pg_describe_object(d.classid, d.objid, d.objsubid) END AS what
FROM pg_depend d
WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = $1 AND d.deptype = 'n'
  AND NOT (d.classid = 'pg_rewrite'::regclass
           AND EXISTS (SELECT 1 FROM pg_rewrite w WHERE w.oid = d.objid AND w.ev_class = $1))
  AND NOT (d.classid = 'pg_constraint'::regclass
           AND EXISTS (SELECT 1 FROM pg_constraint k WHERE k.oid = d.objid AND k.conrelid = $1))
ORDER BY 1
-- name: grants
-- Table $1's grants to others than its owner: role (NULL: PUBLIC), privilege, grantable.
SELECT CASE WHEN a.grantee = 0 THEN NULL ELSE pg_get_userbyid(a.grantee)::text END,
       a.privilege_type::text, a.is_grantable
FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) a
WHERE c.oid = $1 AND a.grantee <> c.relowner
-- name: owner
-- Table $1's owner, and whether it is another role than the session's.
SELECT pg_get_userbyid(relowner)::text, relowner <> (SELECT oid FROM pg_roles WHERE rolname = current_user)
FROM pg_class WHERE oid = $1
-- name: backend_pid
SELECT pg_backend_pid()
-- name: stale_work_schemas
-- Work schemas of sessions that ended without dropping theirs (killed runs).
SELECT nspname::text FROM pg_namespace
WHERE nspname LIKE 'kanon\_work\_%' AND substr(nspname, 12) ~ '^[0-9]+$'
  AND substr(nspname, 12)::int NOT IN (SELECT pid FROM pg_stat_activity)
