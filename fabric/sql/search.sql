-- name: search
-- Hybrid (and lexical) retrieval in one statement: a vector leg (HNSW index scan, exact scan when it
-- comes up short), a lexical leg (full text over search_text through the GIN index, idf-weighted),
-- and their fusion.
--   mode 'lexical' : rank by (named terms matched, lexical score); score = named * (1 + Σ idf) + lexical
--   mode 'hybrid'  : rank by named terms matched, then the attribute the question asks about, then
--                    reciprocal rank fusion of both legs
-- Both legs apply the tenant and the time filter (fabric_api.holds) before they rank and cut, so
-- neither can lose a qualifying memory behind better-scoring ones that do not qualify; the lexical
-- leg's term statistics, too, are those of the memories that hold.
-- Parameters: org, q (the query's embedding; NULL in lexical mode), query (its text), names (the
-- words it capitalises, found by fabric/read/search.py), valid_at, known_at, include_superseded,
-- live_only (only memories currently believed and live), mode, k, pool (rows per leg), rrf_k, df_cap,
-- subject_prefix (NULL, or only memories in that namespace or below it: fabric_api.under, migration 0004).
-- current (a current-state read: the vector leg searches fabric.current_embeddings), common_df.
-- attribute_relations, attribute_words, question_words, attribute_weight: the attribute the question
-- asks about, its words, and all its words (fabric/read/intent.py); the weight of a memory that
-- states it (see `asked`).
-- The vector leg (ann, qualifying, nearest) is the fragment vector_leg, shared with search_vector.
WITH
-- ---------------------------------------------------------------- lexical leg
{{query_lexemes}},
terms AS MATERIALIZED (   -- each lexeme, and each pair of lexemes adjacent in the query as a phrase,
                          -- with the number of the org's memories that contain its rarer lexeme: of
                          -- every state (org_df) and current (current_df, fabric.current_embeddings)
    SELECT row_number() OVER () AS term, t.tq, d.org_df, d.current_df, cardinality(t.lexemes) = 1 AS lexeme
    FROM (SELECT tq, ARRAY[lexeme] AS lexemes FROM qlex
          UNION
          SELECT tsquery_phrase(a.tq, b.tq), ARRAY[a.lexeme, b.lexeme]
          FROM qlex a JOIN qlex b ON b.pos = a.pos + 1) t
    CROSS JOIN LATERAL (
        SELECT min(coalesce(c.memories, 0)) AS org_df, min(coalesce(c.current_memories, 0)) AS current_df
        FROM unnest(t.lexemes) AS l(lexeme)
        LEFT JOIN fabric.term_counts c ON c.org = %(org)s AND c.lexeme = l.lexeme) d
),
postings AS MATERIALIZED (   -- each term's memories that hold (GIN index on org and text, then the
                             -- time filter), up to df_cap, with the key and state `keyed` needs. Not
                             -- scanned, as it could weigh nothing (see weights): a term in common_df or
                             -- more of the org's memories, and in a current-state read over the whole
                             -- org, a term in df_cap or more current memories (those that hold now are
                             -- among them: only one whose valid time ended since its memory last
                             -- changed, or starts later, is counted and does not hold).
    SELECT t.term, p.id, p.names, p.subject, p.relation, p.state
    FROM terms t
    CROSS JOIN LATERAL (
        SELECT m.id, (SELECT count(*) FROM named n WHERE m.search_text @@ n.tq) AS names,
               m.subject, m.relation, v.state
        FROM fabric.memories m
        JOIN fabric.memory_versions v ON v.org = m.org AND v.memory_id = m.id
        -- the org through the full-text index only (no `m.org = ...`: with one, the planner may AND the
        -- term's few rows with a B-tree bitmap of all the org's, 5.6 ms a term for a 40k-memory org)
        WHERE ARRAY[m.org] @> ARRAY[%(org)s]::text[] AND m.search_text @@ t.tq
          AND t.org_df < %(common_df)s
          AND (NOT %(current)s OR %(subject_prefix)s::text IS NOT NULL OR NOT t.lexeme OR t.current_df < %(df_cap)s)
          AND {{version_holds}}
          AND (%(subject_prefix)s::text IS NULL OR fabric_api.under(m.subject, %(subject_prefix)s))
        LIMIT %(df_cap)s) p
),
{{lexical_ranking}},
-- ---------------------------------------------------------------- vector leg
{{vector_leg}},
vec_leg AS (
    SELECT s.id, s.distance, row_number() OVER (ORDER BY s.distance, s.id) AS vec_rank,
           (SELECT count(*) FROM named n WHERE m.search_text @@ n.tq) AS names,
           m.subject, m.relation, s.state
    FROM nearest s
    JOIN fabric.memories m ON m.org = %(org)s AND m.id = s.id
),
{{fusion}}

-- name: search_exact
-- `search` for a time-travel read of a small org (fabric/read/search.py: SMALL_ORG memories or fewer):
-- the same legs, weights and fusion, computed exactly over the org's memories that hold, with no HNSW
-- and no per-term index scans: for a few hundred memories a cosine and a full-text test each cost less
-- than walking the graph of every memory and scanning each term's postings. The vector leg is the exact
-- nearest `pool` (what `search`'s index scan approximates, and its exact-scan fallback computes); the
-- lexical leg is BM25 over the same postings, N and df (a term in df_cap or more of the memories that
-- hold weighs nothing, as there). Correct for a current-state read too (not used for one: no cheaper
-- there). Parameters as in `search`.
WITH
{{query_lexemes}},
terms AS MATERIALIZED (   -- each lexeme, and each pair of lexemes adjacent in the query as a phrase
    SELECT row_number() OVER () AS term, t.tq
    FROM (SELECT tq FROM qlex
          UNION
          SELECT tsquery_phrase(a.tq, b.tq) FROM qlex a JOIN qlex b ON b.pos = a.pos + 1) t
),
candidates AS MATERIALIZED (   -- the org's memories that hold, with their distance to the query
    SELECT m.id, m.search_text, m.subject, m.relation, v.state, m.embedding <=> %(q)s::vector AS distance
    {{memories_that_hold}}
),
postings AS MATERIALIZED (   -- each term's memories: one test of any query lexeme per candidate, then
                             -- each term on the few that have one
    SELECT t.term, c.id, (SELECT count(*) FROM named n WHERE c.search_text @@ n.tq) AS names,
           c.subject, c.relation, c.state
    FROM (SELECT * FROM candidates
          WHERE search_text @@ (SELECT string_agg(DISTINCT tq::text, ' | ')::tsquery FROM qlex)) c
    JOIN terms t ON c.search_text @@ t.tq
),
{{lexical_ranking}},
-- ---------------------------------------------------------------- vector leg
vec_leg AS (
    SELECT s.id, s.distance, row_number() OVER (ORDER BY s.distance, s.id) AS vec_rank,
           (SELECT count(*) FROM named n WHERE s.search_text @@ n.tq) AS names,
           s.subject, s.relation, s.state
    FROM (SELECT * FROM candidates c
          WHERE %(mode)s <> 'lexical'
            -- a current-state read's vector leg searches what fabric.current_embeddings holds
            AND (NOT %(current)s OR EXISTS (SELECT 1 FROM fabric.current_embeddings e
                                            WHERE e.org = %(org)s AND e.memory_id = c.id))
          ORDER BY distance, id
          LIMIT %(pool)s) s
),
{{fusion}}

-- name: search_vector
-- Vector retrieval: the k memories nearest to the query that hold at (valid_at, known_at).
-- A current-state read (current: no valid_at / known_at asked, or live_only) walks the HNSW index of
-- fabric.current_embeddings, which holds only what can be current; a time-travel read walks the index
-- of every memory, fabric.memories. With pgvector >= 0.8 the scan is iterative (fabric/read/search.py
-- sets hnsw.iterative_scan): it keeps going until k rows pass the WHERE. With an older pgvector, or when
-- the iterative scan gives up, it returns fewer than k rows that qualify and the exact scan over every
-- qualifying memory answers instead. score = cosine similarity. Parameters as in `search` (pool = k
-- in vector mode), plus current.
WITH
{{vector_leg}},
top AS (   -- re-sorted: a relaxed-order iterative scan may return its rows slightly out of order
    SELECT id, distance, row_number() OVER (ORDER BY distance, id) AS vec_rank
    FROM nearest
)
SELECT m.id, m.org, m.parent_id, m.root_id, m.depth, m.content, m.subject, m.relation, m.value,
       v.valid_from, v.valid_to, v.recorded_at, v.expired_at, v.superseded_by, m.placement,
       m.source, m.kind, m.durability, m.metadata, v.version, v.state, v.decision_id,
       1 - t.distance AS score, t.vec_rank AS vector_rank, NULL::bigint AS lexical_rank,
       0::bigint AS named_matches
FROM top t
JOIN fabric.memories m ON m.org = %(org)s AND m.id = t.id
JOIN fabric.memory_versions v ON v.org = m.org AND v.memory_id = m.id
WHERE {{version_holds}}
ORDER BY t.vec_rank
LIMIT %(k)s

-- name: search_vector_current
-- Vector retrieval through the index scan alone, current state (the common case, pgvector >= 0.8):
-- the k memories nearest to the query that hold now, with their rows. The scan takes scan_limit (2k)
-- candidates of the org from fabric.current_embeddings, then the time filter (see current_scan). It
-- returns fewer than k rows when the scan gave up, more than k of the candidates do not hold, or fewer
-- than k memories qualify; fabric/read/search.py then runs search_vector, whose exact scan answers.
-- One branch and no exact-scan branch: at ~1.5 ms of execution, planning search_vector (0.94 ms at
-- 100k memories) was a third of a search. Parameters as in search_vector.
SELECT m.id, m.org, m.parent_id, m.root_id, m.depth, m.content, m.subject, m.relation, m.value,
       v.valid_from, v.valid_to, v.recorded_at, v.expired_at, v.superseded_by, m.placement,
       m.source, m.kind, m.durability, m.metadata, v.version, v.state, v.decision_id,
       1 - n.distance AS score, row_number() OVER (ORDER BY n.distance, n.id) AS vector_rank,
       NULL::bigint AS lexical_rank, 0::bigint AS named_matches
FROM (SELECT %(q)s::vector AS vec) qv
CROSS JOIN LATERAL {{current_scan}} n
JOIN fabric.memory_versions v ON v.org = %(org)s AND v.memory_id = n.id
JOIN fabric.memories m ON m.org = %(org)s AND m.id = n.id
WHERE {{version_holds}}
ORDER BY vector_rank
LIMIT %(k)s

-- name: search_vector_at
-- search_vector_current for time travel (valid_at / known_at asked): the iterative scan of every
-- memory's index, the time filter inside it (a time-travel filter is selective), re-sorted by
-- distance (a relaxed-order scan may return rows slightly out of order). Short of k rows:
-- search_vector answers. Parameters as in search_vector.
SELECT a.id, a.org, a.parent_id, a.root_id, a.depth, a.content, a.subject, a.relation, a.value,
       a.valid_from, a.valid_to, a.recorded_at, a.expired_at, a.superseded_by, a.placement,
       a.source, a.kind, a.durability, a.metadata, a.version, a.state, a.decision_id,
       1 - a.distance AS score, row_number() OVER (ORDER BY a.distance, a.id) AS vector_rank,
       NULL::bigint AS lexical_rank, 0::bigint AS named_matches
FROM (SELECT m.id, m.org, m.parent_id, m.root_id, m.depth, m.content, m.subject, m.relation, m.value,
             v.valid_from, v.valid_to, v.recorded_at, v.expired_at, v.superseded_by, m.placement,
             m.source, m.kind, m.durability, m.metadata, v.version, v.state, v.decision_id,
             m.embedding <=> %(q)s::vector AS distance
      {{memories_that_hold}}
      ORDER BY m.embedding <=> %(q)s::vector
      LIMIT %(k)s) a
ORDER BY vector_rank

-- name: search_vector_ann
-- The vector leg's index scan on its own (for EXPLAIN, tests and the benchmark's fallback count): the
-- pool nearest memories that hold, as the HNSW scan finds them (`ann`). It can return fewer than pool
-- rows; the search statements then fall back to the exact scan. Parameters as in search_vector.
WITH
{{vector_leg}}
SELECT a.id, m.content, a.distance
FROM ann a
JOIN fabric.memories m ON m.org = %(org)s AND m.id = a.id

-- fragment: version_holds
-- The version v holds at (valid_at, known_at) (fabric_api.holds); with live_only, it is also believed
-- now and live.
(fabric_api.holds(v.valid_from, v.valid_to, v.recorded_at, v.expired_at,
                  %(valid_at)s, %(known_at)s, %(include_superseded)s)
 AND (NOT %(live_only)s OR {{live_version}}))

-- fragment: live_version
-- The version v is believed now and live (what placement compares a write with).
(v.expired_at IS NULL AND v.state = 'live')

-- fragment: memories_that_hold
-- The org's memories m whose version v holds (version_holds), within subject_prefix when one is given
-- (fabric_api.under, migration 0004). A FROM ... WHERE: a query adds its own conditions after it.
FROM fabric.memories m
JOIN fabric.memory_versions v ON v.org = m.org AND v.memory_id = m.id
WHERE m.org = %(org)s AND {{version_holds}}
  AND (%(subject_prefix)s::text IS NULL OR fabric_api.under(m.subject, %(subject_prefix)s))

-- fragment: current_scan
-- The current-state index scan: scan_limit candidates of the org from fabric.current_embeddings' HNSW
-- index (the org's own partial index when it has one: fabric/read/indexes.py), nearest to qv.vec (the
-- caller's query vector: a one-row `(SELECT %(q)s::vector AS vec) qv`, or placement's batch of them,
-- LATERAL), nearest first; the caller joins memory_versions and applies the time filter after it. Nearly every row there holds
-- now (the few that do not: a valid time ended since the memory's last change, or one that starts in
-- the future), and with the filter outside the scan the planner estimates the org's share alone.
-- Inside it, the join to memory_versions was estimated to keep ~3 in 100 of the org's rows (each key
-- column's selectivity multiplied), which made the exact sort of a 4-percent org look cheaper than
-- the index: 7.0 -> 1.8 ms of CPU at 100k memories (k 10).
(SELECT c.memory_id AS id, c.embedding <=> qv.vec AS distance
 FROM fabric.current_embeddings c
 WHERE c.org = %(org)s
   AND (%(subject_prefix)s::text IS NULL
        OR EXISTS (SELECT 1 FROM fabric.memories s WHERE s.org = c.org AND s.id = c.memory_id
                   AND fabric_api.under(s.subject, %(subject_prefix)s)))
 ORDER BY c.embedding <=> qv.vec
 LIMIT %(scan_limit)s)

-- fragment: vector_leg
-- The vector leg of search and search_vector, three CTEs: `ann`, the HNSW index scan (one branch
-- runs: current state or time travel; the other's one-time filter is false, and both are off in
-- lexical mode, where q is NULL); `qualifying`, the exact scan over every memory that qualifies, run
-- only when the index scan came up short of pool rows; `nearest`, whichever of the two answers. Each
-- row carries the state of the version that holds (hybrid ranking reads it: `keyed`).
ann AS MATERIALIZED (
    (SELECT n.id, n.distance, v.state   -- current state: the scan, then the time filter on its candidates
     FROM (SELECT %(q)s::vector AS vec) qv
     CROSS JOIN LATERAL {{current_scan}} n
     JOIN fabric.memory_versions v ON v.org = %(org)s AND v.memory_id = n.id
     WHERE %(current)s AND %(mode)s <> 'lexical' AND {{version_holds}}
     ORDER BY n.distance
     LIMIT %(pool)s)
  UNION ALL
    (SELECT m.id, m.embedding <=> %(q)s::vector AS distance, v.state   -- time travel: the filter in the scan
     {{memories_that_hold}}
       AND NOT %(current)s AND %(mode)s <> 'lexical'
     ORDER BY m.embedding <=> %(q)s::vector
     LIMIT %(pool)s)
),
qualifying AS MATERIALIZED (
    SELECT m.id, m.embedding <=> %(q)s::vector AS distance, v.state
    {{memories_that_hold}}
      AND %(mode)s <> 'lexical'
      AND (SELECT count(*) FROM ann) < %(pool)s
      AND (NOT %(current)s OR EXISTS (SELECT 1 FROM fabric.current_embeddings c
                                      WHERE c.org = m.org AND c.memory_id = m.id))
),
nearest AS (
    SELECT id, distance, state FROM ann WHERE (SELECT count(*) FROM ann) >= %(pool)s
  UNION ALL
    (SELECT id, distance, state FROM qualifying ORDER BY distance, id LIMIT %(pool)s)
)

-- name: search_context
-- Branch context for many hits at once: for each hit, up to n neighbours on its branch (its parent
-- chain and its subtree), nearest first. Both walks go through every node whatever its state (a
-- superseded node must not hide what lies beyond it); the time filter applies to the output only,
-- as in fabric_api.walk, which walks the subtree side.
WITH RECURSIVE
hits AS (
    SELECT h.id, n.parent_id, n.depth
    FROM unnest(%(ids)s::uuid[]) AS h(id)
    JOIN fabric_api.memory_nodes n ON n.org = %(org)s AND n.id = h.id
),
chain (hit, id, hops, path) AS (   -- up the parent chain
    SELECT h.id, h.parent_id, 1, ARRAY[h.id, h.parent_id] FROM hits h WHERE h.parent_id IS NOT NULL
  UNION ALL
    SELECT c.hit, n.parent_id, c.hops + 1, c.path || n.parent_id
    FROM chain c
    JOIN fabric_api.memory_nodes n ON n.org = %(org)s AND n.id = c.id
    WHERE n.parent_id IS NOT NULL
      AND c.hops < %(max_hops)s                -- depth guard
      AND n.parent_id <> ALL (c.path)          -- cycle guard
),
near AS (
    SELECT c.hit, c.hops, 0 AS side, v.*
    FROM chain c
    JOIN fabric_api.memory_versions v ON v.org = %(org)s AND v.id = c.id
    WHERE fabric_api.holds(v.valid_from, v.valid_to, v.recorded_at, v.expired_at,
                           %(valid_at)s, %(known_at)s, %(include_superseded)s)
  UNION ALL
    SELECT h.id, w.depth - h.depth, 1, w.*   -- down the subtree: fabric_api.walk from the hit
    FROM hits h
    CROSS JOIN LATERAL fabric_api.walk(%(org)s, h.id, %(include_superseded)s, %(max_hops)s,
                                       %(valid_at)s, %(known_at)s) w
    WHERE w.id <> h.id
),
ranked AS (
    SELECT n.*, row_number() OVER (PARTITION BY n.hit ORDER BY n.hops, n.side, n.recorded_at, n.id) AS nth
    FROM near n
)
SELECT * FROM ranked WHERE nth <= %(n)s ORDER BY hit, nth

-- fragment: query_lexemes
-- The query's lexemes and the named ones (CTEs qlex, named) of `search` and `search_exact`.
qlex AS (   -- the query's lexemes, normalised as search_text is ('english'), with their positions
    SELECT l.lexeme, p.pos,
           ('''' || replace(replace(l.lexeme, '\', '\\'), '''', '''''') || '''')::tsquery AS tq
    FROM unnest(to_tsvector('english', %(query)s)) AS l
    CROSS JOIN LATERAL unnest(l.positions) AS p(pos)
),
named AS MATERIALIZED (   -- lexemes of the words the query names (people, places, products)
    SELECT DISTINCT q.tq
    FROM qlex q JOIN unnest(to_tsvector('english', %(names)s)) AS n ON n.lexeme = q.lexeme
)

-- fragment: lexical_ranking
-- The lexical leg's weights and ranking (CTEs weights, lex_match, lex_leg) from `postings`, in `search`
-- and `search_exact`.
holding AS MATERIALIZED (   -- N for BM25: the memories that hold, counted up to df_cap (once: inside
                            -- `weights` a nested loop could count it again for every posting)
    SELECT count(*) AS n
    FROM (SELECT 1 FROM fabric.memory_versions v
          WHERE v.org = %(org)s AND {{version_holds}}
            -- a current-state read counts believed versions only: through the partial
            -- index of those (ix_memory_versions_current), not past the expired ones
            AND (NOT %(current)s OR v.expired_at IS NULL)
          -- in key order: the org's own rows through the primary key (a seq scan would
          -- read past every other org's rows before it met this one's)
          ORDER BY v.memory_id
          LIMIT %(df_cap)s) s
),
weights AS MATERIALIZED (   -- BM25's idf over the memories that hold (N, df counted up to df_cap): the
                            -- statistics of what can be returned. A term in df_cap or more of them
                            -- weighs nothing (a stop word for this org at this time).
    SELECT p.term, ln(1 + (c.n - count(*) + 0.5) / (count(*) + 0.5))::float8 AS idf
    FROM postings p CROSS JOIN holding c
    GROUP BY p.term, c.n
    HAVING count(*) < %(df_cap)s
),
lex_match AS (   -- sum the weights of the terms each memory contains (binary term frequency)
    SELECT p.id, sum(w.idf) AS lex, max(p.names) AS names,
           min(p.subject) AS subject, min(p.relation) AS relation, min(p.state) AS state   -- one per id
    FROM postings p JOIN weights w ON w.term = p.term
    GROUP BY p.id
),
lex_leg AS (   -- every memory here holds: rank them all, then cut
    SELECT x.id, x.names, x.subject, x.relation, x.state,
           x.names * (SELECT 1 + sum(idf) FROM weights) + x.lex AS lex_score,
           rank() OVER (ORDER BY x.names DESC, x.lex DESC) AS lex_rank
    FROM lex_match x
    ORDER BY x.names DESC, x.lex DESC, x.id
    LIMIT %(pool)s
)

-- fragment: fusion
-- Both legs fused and ranked, and the output rows, of `search` and `search_exact` (from vec_leg, lex_leg).
-- ---------------------------------------------------------------- fusion
fused AS (
    SELECT coalesce(v.id, l.id) AS id, v.vec_rank, l.lex_score, l.lex_rank, coalesce(v.names, l.names) AS names,
           coalesce(v.subject, l.subject) AS subject, coalesce(v.relation, l.relation) AS relation,
           coalesce(v.state, l.state) AS state
    FROM vec_leg v FULL JOIN lex_leg l ON l.id = v.id
),
keyed AS MATERIALIZED (   -- hybrid: the fused memories' keys and the state of the version that holds (the
                          -- output's: both legs found the memory through it, and carried them here)
    SELECT f.id, f.subject, f.relation, f.state
    FROM fused f
    WHERE %(mode)s = 'hybrid' AND f.relation IS NOT NULL
),
relations_asked AS MATERIALIZED (   -- each relation name found, once: is it the attribute the question asks about
                       -- (fabric/read/intent.py)? One of the lexicon attributes the question names, or a
                       -- name whose every word is among the question's (favourite_restaurant ~ "favourite
                       -- restaurant"; words compared stemmed, a stem may be a prefix of the other)
    SELECT r.relation
    FROM (SELECT DISTINCT relation FROM keyed) r
    CROSS JOIN (SELECT tsvector_to_array(to_tsvector('english', %(attribute_words)s)) AS words) q
    WHERE r.relation = ANY(%(attribute_relations)s::text[])
       OR (SELECT bool_and(EXISTS (SELECT 1 FROM unnest(q.words) w
                                   WHERE (length(rw) >= 3 AND starts_with(w, rw)) OR (length(w) >= 4 AND starts_with(rw, w))))
           FROM unnest(tsvector_to_array(to_tsvector('english', replace(r.relation, '_', ' ')))) rw)
),
matched AS MATERIALIZED (   -- subject_words: how many words of the subject the question has (question_words);
                            -- subject_extra: how many it does not
    SELECT k.id, (NOT %(include_superseded)s OR k.state = 'live')
               AND k.relation IN (SELECT relation FROM relations_asked) AS relation_asked,
           w.subject_words, w.subject_extra
    FROM keyed k
    CROSS JOIN LATERAL (SELECT count(*) FILTER (WHERE w = ANY(%(question_words)s::text[])) AS subject_words,
                               count(*) FILTER (WHERE w <> ALL(%(question_words)s::text[])) AS subject_extra
                        FROM unnest(string_to_array(lower(k.subject), ' ')) w) w
),
named_best AS (   -- of the subjects that have most words in common with the question, those with fewest
                  -- other words: "Nordlys AS", not the sister company "Nordlys Fisk AS" beside it
    SELECT id, relation_asked, subject_words = max(subject_words) OVER () AS most,
           subject_extra = min(subject_extra) OVER (PARTITION BY subject_words) AS fewest
    FROM matched
),
asked AS (   -- attribute: the memory states the attribute asked about, of the subject the question names best
             -- (most words in common: "Corin Lindqvist", not the twin "Corin Lindquist"; then fewest other
             -- words); when it names no subject found here, of any subject. other_subject: the question
             -- names this subject with more words beside it (a sister company): it ranks after the one named
    SELECT n.id, (n.relation_asked AND n.most AND (n.fewest OR best.words = 0))::int AS attribute,
           (n.most AND NOT n.fewest AND best.words > 0)::int AS other_subject
    FROM named_best n CROSS JOIN (SELECT max(subject_words) AS words FROM matched) best
),
scored AS (   -- named terms matched (counted by whichever leg found the memory) first, then the attribute
              -- asked about (a tier: attribute_weight exceeds any fused score), then RRF
    SELECT f.id, f.vec_rank, f.lex_rank, f.names,
           CASE %(mode)s WHEN 'hybrid' THEN coalesce(a.attribute, 0) END AS attribute,
           CASE %(mode)s
               WHEN 'lexical' THEN f.lex_score
               ELSE f.names + %(attribute_weight)s * coalesce(a.attribute, 0)
                            - %(other_subject_weight)s * coalesce(a.other_subject, 0)
                            + coalesce(1.0::float8 / (%(rrf_k)s + f.vec_rank), 0)
                            + coalesce(1.0::float8 / (%(rrf_k)s + f.lex_rank), 0)
           END AS score
    FROM fused f LEFT JOIN asked a ON a.id = f.id
),
top AS (
    SELECT * FROM scored ORDER BY score DESC, vec_rank, id LIMIT %(k)s
)
SELECT m.id, m.org, m.parent_id, m.root_id, m.depth, m.content, m.subject, m.relation, m.value,
       v.valid_from, v.valid_to, v.recorded_at, v.expired_at, v.superseded_by, m.placement,
       m.source, m.kind, m.durability, m.metadata, v.version, v.state, v.decision_id,
       t.score, t.vec_rank AS vector_rank, t.lex_rank AS lexical_rank, t.names AS named_matches,
       t.attribute AS attribute_match
FROM top t
JOIN fabric.memories m ON m.org = %(org)s AND m.id = t.id
JOIN fabric.memory_versions v ON v.org = m.org AND v.memory_id = m.id
WHERE {{version_holds}}
ORDER BY t.score DESC, t.vec_rank, t.id
