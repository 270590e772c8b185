-- Named queries. Each block starts with "-- name: NAME"; values are always bound with ?.

-- name: world_pairs
SELECT world_id, ingest_id, pair_id, mechanism, domain, split, coarse, hypothesis_0, hypothesis_1, recipient_role,
       candidate_order, request, intake_channel, operating_window, case_context
FROM worlds WHERE dataset_id = ?;

-- name: world_candidates
SELECT world_id, domain, candidate_order FROM worlds WHERE dataset_id = ?;

-- name: existing_responses
SELECT model, world_id, ingest_id FROM responses WHERE dataset_id = ?;

-- name: existing_refusal_responses
SELECT model, world_id, ingest_id FROM refusal_responses WHERE dataset_id = ?;

-- name: existing_documents
SELECT doc_id, ingest_id FROM ql_documents WHERE dataset_id = ?;

-- name: document_texts
SELECT doc_id, text FROM ql_documents WHERE dataset_id = ?;

-- name: existing_predictions
SELECT detector, doc_id, ingest_id FROM ql_predictions WHERE dataset_id = ?;

-- name: coverage_of_detectors
-- Per named detector and split of the dataset's corpus: its documents, those the detector has a prediction line
-- for (stored, or among the (detector, doc_id) pairs a dry run would store), and those whose stored line records
-- a failure (an endpoint detector that could not answer). A document without a line counts as "reported
-- nothing" when the detector is scored (QUASILEAK.md section 4).
-- Parameters: detectors, dataset_id, pending detectors, pending doc_ids (one pair per position), dataset_id.
SELECT t.detector, d.split, count(*) AS documents, count(p.doc_id) AS predicted, count(p.failure) AS failed
FROM (SELECT DISTINCT unnest(?::VARCHAR[]) AS detector) t
CROSS JOIN ql_documents d
LEFT JOIN (SELECT detector, doc_id, failure FROM ql_predictions WHERE dataset_id = ?
           UNION ALL
           SELECT detector, doc_id, NULL AS failure
           FROM (SELECT unnest(?::VARCHAR[]) AS detector, unnest(?::VARCHAR[]) AS doc_id)) p
       ON p.detector = t.detector AND p.doc_id = d.doc_id
WHERE d.dataset_id = ?
GROUP BY t.detector, d.split ORDER BY t.detector, d.split;

-- name: detectors_of_ingest
-- The detectors whose predictions an ingest stored (a file ingested again: its coverage is said again).
SELECT DISTINCT detector FROM ql_predictions WHERE ingest_id = ? ORDER BY detector;

-- name: ingest_by_sha
SELECT ingest_id, file_format, n_rejected FROM ingests WHERE dataset_id = ? AND kind = ? AND sha256 = ?;

-- name: ingests_of_kind
SELECT count(*) AS n FROM ingests WHERE dataset_id = ? AND kind = ?;

-- name: retry_ingest_forget_rejects
DELETE FROM rejects WHERE ingest_id = ?;

-- name: retry_ingest_update
UPDATE ingests SET n_lines = ?, n_accepted = n_accepted + ?, n_invalid = n_invalid + ?, n_rejected = ?,
                   finished_at = ?
WHERE ingest_id = ?;

-- name: dataset_by_id
SELECT * FROM datasets WHERE dataset_id = ?;

-- name: insert_dataset
INSERT INTO datasets (dataset_id, simulated, description, seed) VALUES (?, ?, ?, ?);


-- name: next_ingest_id
SELECT coalesce(max(ingest_id), 0) + 1 AS next_id FROM ingests;

-- name: insert_model_if_absent
INSERT INTO models (dataset_id, model, simulated, description)
SELECT ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM models WHERE dataset_id = ? AND model = ?);

-- name: insert_models_if_absent
-- The models of a batch (a list, with their descriptions in a second list) that the dataset lacks.
INSERT INTO models (dataset_id, model, simulated, description)
SELECT ?, m, ?, d FROM (SELECT unnest(?::VARCHAR[]) AS m, unnest(?::VARCHAR[]) AS d)
WHERE m NOT IN (SELECT model FROM models WHERE dataset_id = ?);

-- name: insert_ingest
INSERT INTO ingests (ingest_id, dataset_id, kind, file_name, file_format, sha256, model, n_lines,
                     n_accepted, n_invalid, n_rejected, started_at, finished_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: datasets
SELECT d.dataset_id, d.simulated, d.description, d.seed, d.created_at,
       (SELECT count(*) FROM worlds w WHERE w.dataset_id = d.dataset_id) AS worlds,
       -- worlds qlb generated (qlb demo, qlb demo --ontology): their private note says so
       (SELECT count(*) FROM worlds w WHERE w.dataset_id = d.dataset_id
                                        AND w.diagnostic_note LIKE 'SIMULATED internal report.%') AS simulated_worlds,
       (SELECT count(DISTINCT model) FROM (SELECT model FROM responses r WHERE r.dataset_id = d.dataset_id
                                           UNION SELECT model FROM refusal_responses r
                                           WHERE r.dataset_id = d.dataset_id)) AS models,   -- with answers
       (SELECT count(*) FROM responses r WHERE r.dataset_id = d.dataset_id) AS responses,
       (SELECT count(*) FROM refusal_responses r WHERE r.dataset_id = d.dataset_id) AS refusal_responses,
       (SELECT count(*) FROM ql_documents q WHERE q.dataset_id = d.dataset_id) AS documents,
       (SELECT count(*) FROM ql_predictions p WHERE p.dataset_id = d.dataset_id) AS prediction_lines
FROM datasets d ORDER BY d.created_at, d.dataset_id;

-- name: split_counts
SELECT domain, split, count(*) AS worlds, count(DISTINCT pair_id) AS pairs
FROM worlds WHERE dataset_id = ? GROUP BY domain, split ORDER BY domain, split;

-- name: model_summary
SELECT m.model, m.simulated, m.description,
       count(r.world_id) AS native_responses,
       count(r.world_id) FILTER (WHERE r.status = 'ok' AND r.valid) AS native_ok,
       count(r.world_id) FILTER (WHERE r.status = 'unavailable') AS native_unavailable,
       count(r.world_id) FILTER (WHERE NOT r.valid) AS native_invalid,
       count(r.world_id) FILTER (WHERE r.choice_not_argmax) AS choice_not_argmax,
       (SELECT count(*) FROM refusal_responses f WHERE f.dataset_id = m.dataset_id AND f.model = m.model) AS refusal_responses,
       (SELECT count(*) FROM refusal_responses f WHERE f.dataset_id = m.dataset_id AND f.model = m.model
                                                   AND f.status = 'unavailable') AS refusal_unavailable
FROM models m LEFT JOIN responses r ON r.dataset_id = m.dataset_id AND r.model = m.model
WHERE m.dataset_id = ?
GROUP BY m.dataset_id, m.model, m.simulated, m.description ORDER BY m.model;

-- name: corpus_summary
SELECT split, count(*) AS documents, count(DISTINCT context_id) AS contexts,
       sum(n_groups)::BIGINT AS gold_groups, sum(n_targets)::BIGINT AS hide_targets
FROM ql_documents WHERE dataset_id = ? GROUP BY split ORDER BY split;

-- name: group_summary
SELECT attribute, policy_label, arity, count(*) AS groups
FROM ql_groups WHERE dataset_id = ? GROUP BY ALL ORDER BY ALL;

-- name: detector_summary
SELECT detector, count(*) AS documents, sum(n_groups)::BIGINT AS groups
FROM ql_predictions WHERE dataset_id = ? GROUP BY detector ORDER BY detector;

-- name: ingest_times
-- What was loaded or collected into a dataset and when: what changed after a run started (why it is stale), and
-- whose answers it had.
-- A file's model is the one its lines name when they all name one (NULL when they name several).
SELECT i.kind, i.file_name, i.file_format,
       coalesce(i.model, CASE i.kind
           WHEN 'responses' THEN (SELECT CASE WHEN count(DISTINCT r.model) = 1 THEN min(r.model) END
                                  FROM responses r WHERE r.ingest_id = i.ingest_id AND r.dataset_id = i.dataset_id)
           WHEN 'refusal' THEN (SELECT CASE WHEN count(DISTINCT r.model) = 1 THEN min(r.model) END
                                FROM refusal_responses r WHERE r.ingest_id = i.ingest_id AND r.dataset_id = i.dataset_id)
       END) AS model,
       i.finished_at, i.sha256
FROM ingests i WHERE i.dataset_id = ? ORDER BY i.finished_at, i.ingest_id;

-- name: recent_ingests
SELECT ingest_id, kind, file_name, file_format, model, n_lines, n_accepted, n_invalid, n_rejected,
       finished_at, sha256
FROM ingests WHERE dataset_id = ? ORDER BY ingest_id DESC LIMIT ?;

-- name: quarantine_summary
SELECT kind, file_name, count(*) AS rejected_lines, min(line_no) AS first_line
FROM rejects WHERE dataset_id = ? GROUP BY kind, file_name ORDER BY kind, file_name;

-- name: invalid_summary
SELECT model, invalid_reason, count(*) AS responses
FROM responses WHERE dataset_id = ? AND NOT valid GROUP BY model, invalid_reason ORDER BY model;

-- name: rejects
SELECT kind, file_name, line_no, field, reason, raw_text
FROM rejects WHERE dataset_id = ? AND (? IS NULL OR kind = ?)
ORDER BY ingest_id, line_no LIMIT ?;

-- name: invalid_responses
SELECT r.model, r.world_id, r.status, r.choice, r.probabilities, r.confidence, r.invalid_reason, r.line_no,
       i.file_name
FROM responses r LEFT JOIN ingests i ON i.ingest_id = r.ingest_id
WHERE r.dataset_id = ? AND NOT r.valid ORDER BY r.model, r.world_id LIMIT ?;

-- name: table_counts
SELECT 'worlds' AS table_name, count(*) AS n FROM worlds WHERE dataset_id = ?
UNION ALL SELECT 'responses', count(*) FROM responses WHERE dataset_id = ?
UNION ALL SELECT 'refusal_responses', count(*) FROM refusal_responses WHERE dataset_id = ?
UNION ALL SELECT 'ql_documents', count(*) FROM ql_documents WHERE dataset_id = ?
UNION ALL SELECT 'ql_groups', count(*) FROM ql_groups WHERE dataset_id = ?
UNION ALL SELECT 'ql_predictions', count(*) FROM ql_predictions WHERE dataset_id = ?
UNION ALL SELECT 'rejects', count(*) FROM rejects WHERE dataset_id = ?
UNION ALL SELECT 'ingests', count(*) FROM ingests WHERE dataset_id = ?;

-- name: refusal_audit_input
SELECT r.model, r.world_id, w.domain, w.mechanism,
       CASE WHEN r.valid THEN r.status ELSE 'unavailable' END AS status,
       CASE WHEN r.valid THEN r.choice END AS choice, CASE WHEN r.valid THEN r.scores END AS scores
FROM refusal_responses r JOIN worlds w ON w.dataset_id = r.dataset_id AND w.world_id = r.world_id
WHERE r.dataset_id = ?
ORDER BY r.model, r.world_id;

-- name: dataset_fingerprint_parts
SELECT kind, sha256 FROM ingests WHERE dataset_id = ? ORDER BY kind, sha256;

-- name: insert_run
INSERT INTO runs (run_id, dataset_id, kind, parameters, dataset_fingerprint, code_version,
                  test_used_for_selection, started_at, finished_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: runs
SELECT run_id, kind, parameters, dataset_fingerprint, code_version, test_used_for_selection,
       started_at, finished_at
FROM runs WHERE dataset_id = ? AND (? IS NULL OR kind = ?) ORDER BY started_at DESC, run_id DESC;

-- name: latest_run_of_fingerprint
SELECT run_id FROM runs WHERE dataset_id = ? AND kind = ? AND dataset_fingerprint = ? AND parameters = ?
  AND finished_at IS NOT NULL
ORDER BY started_at DESC LIMIT 1;

-- name: unfinished_run_of_fingerprint
SELECT run_id FROM runs WHERE dataset_id = ? AND kind = ? AND dataset_fingerprint = ? AND parameters = ?
  AND code_version = ? AND finished_at IS NULL
ORDER BY started_at DESC LIMIT 1;

-- name: last_request_of_world
-- The request qlb collect last sent for one world, model and probe, and its collection's instruction version.
SELECT k.request_sha256, c.instruction_version FROM collection_calls k JOIN collections c USING (collection_id)
WHERE k.dataset_id = ? AND k.model = ? AND k.probe = ? AND k.world_id = ?
ORDER BY k.called_at DESC, k.attempt DESC LIMIT 1;

-- name: unpaired_worlds
-- A dataset's worlds whose pair holds only them (their twin not ingested, or rejected).
SELECT pair_id, min(world_id) AS world_id FROM worlds WHERE dataset_id = ?
GROUP BY pair_id HAVING count(*) = 1 ORDER BY pair_id;

-- name: finish_run
UPDATE runs SET finished_at = ? WHERE run_id = ?;

-- name: unfinished_runs
SELECT run_id FROM runs WHERE dataset_id = ? AND finished_at IS NULL;

-- name: refusal_results
SELECT model, domain, n, withheld, direct_correct, direct_incorrect, residual_unique_correct,
       residual_unique_incorrect, residual_tied, residual_zero_mass, withhold_rate,
       conditional_residual_recovery, overall_recovery, unavailable, unique_winner_coverage,
       choice_not_argmax
FROM refusal_results WHERE run_id = ? ORDER BY model, domain;

-- name: refusal_outcomes_for_model
SELECT o.world_id, o.domain, o.mechanism, o.choice, o.outcome, o.residual_winner, w.split
FROM refusal_outcomes o JOIN worlds w ON w.dataset_id = o.dataset_id AND w.world_id = o.world_id
WHERE o.run_id = ? AND o.model = ? AND (? IS NULL OR o.domain = ?) AND (? IS NULL OR o.outcome = ?)
ORDER BY o.world_id LIMIT ?;

-- name: refusal_response
SELECT r.status, r.choice, r.scores, w.domain, w.mechanism, w.request, w.case_context
FROM refusal_responses r JOIN worlds w ON w.dataset_id = r.dataset_id AND w.world_id = r.world_id
WHERE r.dataset_id = ? AND r.model = ? AND r.world_id = ?;

-- name: ql_corpus
SELECT doc_id, split, context_id, text, profile, policy FROM ql_documents WHERE dataset_id = ? ORDER BY doc_id;

-- name: ql_gold_groups
SELECT doc_id, group_index, attribute, cues FROM ql_groups WHERE dataset_id = ? ORDER BY doc_id, group_index;

-- name: ql_prediction_rows
SELECT detector, doc_id, groups, failure FROM ql_predictions WHERE dataset_id = ? ORDER BY detector, doc_id;

-- name: ql_delete_detector_predictions
DELETE FROM ql_predictions WHERE dataset_id = ? AND detector = ? AND doc_id IN (SELECT unnest(?));

-- name: ql_upsert_detector
INSERT INTO ql_detectors (dataset_id, detector, simulated, description) VALUES (?, ?, ?, ?)
ON CONFLICT (dataset_id, detector) DO UPDATE SET simulated = excluded.simulated, description = excluded.description;

-- name: ql_scores
SELECT s.detector, s.split, s.slice_kind, s.slice, s.metric, s.value, s.ci_low, s.ci_high,
       coalesce(d.simulated, false) AS simulated
FROM ql_scores s LEFT JOIN ql_detectors d ON d.dataset_id = s.dataset_id AND d.detector = s.detector
WHERE s.run_id = ? ORDER BY s.detector, s.slice_kind, s.slice, s.metric;

-- name: ql_runs
SELECT DISTINCT r.run_id, r.started_at, r.parameters FROM runs r JOIN ql_scores s ON s.run_id = r.run_id
WHERE r.dataset_id = ? ORDER BY r.started_at DESC, r.run_id DESC;

-- name: ql_document
SELECT doc_id, split, context_id, recipient, purpose, text, profile, policy FROM ql_documents
WHERE dataset_id = ? AND doc_id = ?;

-- name: ql_document_groups
SELECT group_index, attribute, policy_label, arity, cues, cue_distance FROM ql_groups
WHERE dataset_id = ? AND doc_id = ? ORDER BY group_index;

-- name: ql_document_prediction
SELECT groups, failure FROM ql_predictions WHERE dataset_id = ? AND detector = ? AND doc_id = ?;

-- name: ql_doc_ids
SELECT doc_id FROM ql_documents WHERE dataset_id = ? AND (? IS NULL OR split = ?) ORDER BY doc_id LIMIT ?;

-- name: predictions_fingerprint
SELECT coalesce(md5(string_agg(detector || '|' || doc_id || '|' || groups, '\n' ORDER BY detector, doc_id)), '')
FROM ql_predictions WHERE dataset_id = ?;

-- name: decoding_input
-- Every planned world with this model's response; no response, unavailable or invalid all enter
-- as unavailable (no prediction field released).
SELECT w.world_id, w.pair_id, w.domain, w.split, w.coarse, w.mechanism, w.hypothesis_0, w.hypothesis_1,
       w.recipient_role, w.candidate_order, w.request, w.intake_channel, w.operating_window, w.case_context,
       CASE WHEN r.status = 'ok' AND r.valid THEN 'ok' ELSE 'unavailable' END AS status,
       CASE WHEN r.status = 'ok' AND r.valid THEN r.choice END AS choice,
       CASE WHEN r.status = 'ok' AND r.valid THEN r.probabilities END AS probabilities,
       CASE WHEN r.status = 'ok' AND r.valid THEN r.confidence END AS confidence
FROM worlds w LEFT JOIN responses r ON r.dataset_id = w.dataset_id AND r.world_id = w.world_id AND r.model = ?
WHERE w.dataset_id = ?
ORDER BY w.world_id;

-- name: answer_sources
-- Per model, probe and source, the dataset's stored answers: an ingested file, or a `qlb collect` run (with its
-- transport, endpoint, endpoint model, settings and times); how many are valid answers, invalid (kept, never
-- repaired) and unavailable, and how many valid ones carry probabilities (scores) and a confidence; `worlds`: the
-- dataset's worlds (a world without an answer enters the audits as unavailable, TUPLE.md section 1).
SELECT a.model, a.probe, i.file_name, m.simulated, c.transport, c.endpoint, c.endpoint_model, c.settings,
       c.started_at, c.finished_at, a.answers, a.valid, a.invalid, a.unavailable, a.with_probabilities,
       a.with_confidence, (SELECT count(*) FROM worlds w WHERE w.dataset_id = ?) AS worlds
FROM (SELECT r.model, 'native' AS probe, r.ingest_id, count(*) AS answers,
             count(*) FILTER (WHERE r.valid AND r.status = 'ok') AS valid,
             count(*) FILTER (WHERE NOT r.valid) AS invalid,
             count(*) FILTER (WHERE r.valid AND r.status = 'unavailable') AS unavailable,
             count(*) FILTER (WHERE r.valid AND r.status = 'ok' AND r.probabilities IS NOT NULL) AS with_probabilities,
             count(*) FILTER (WHERE r.valid AND r.status = 'ok' AND r.confidence IS NOT NULL) AS with_confidence
      FROM responses r WHERE r.dataset_id = ? GROUP BY r.model, r.ingest_id
      UNION ALL
      SELECT f.model, 'refusal', f.ingest_id, count(*),
             count(*) FILTER (WHERE coalesce(f.valid, TRUE) AND f.status = 'ok'),
             count(*) FILTER (WHERE NOT coalesce(f.valid, TRUE)),
             count(*) FILTER (WHERE coalesce(f.valid, TRUE) AND f.status = 'unavailable'),
             count(*) FILTER (WHERE coalesce(f.valid, TRUE) AND f.status = 'ok' AND f.scores IS NOT NULL), NULL
      FROM refusal_responses f WHERE f.dataset_id = ? GROUP BY f.model, f.ingest_id) a
LEFT JOIN ingests i ON i.ingest_id = a.ingest_id
LEFT JOIN models m ON m.dataset_id = ? AND m.model = a.model
LEFT JOIN collections c ON c.ingest_id = a.ingest_id
ORDER BY a.model, a.probe, c.started_at NULLS FIRST, i.file_name;

-- name: models_with_responses
SELECT DISTINCT model FROM responses WHERE dataset_id = ? ORDER BY model;

-- name: coarse_accuracy
SELECT model, scope, accuracy, ci_low, ci_high, n FROM coarse_accuracy WHERE run_id = ? ORDER BY model, scope;

-- name: recovery_results
SELECT model, view, scope, accuracy, ci_low, ci_high, log_loss, n FROM recovery_results
WHERE run_id = ? ORDER BY model, view, scope;

-- name: recovery_differences
SELECT model, view_a, view_b, difference, ci_low, ci_high, n FROM recovery_differences
WHERE run_id = ? ORDER BY model, view_a, view_b;

-- name: decoder_selections
SELECT model, domain, view, candidate, candidate_view, val_accuracy, val_log_loss, n_candidates
FROM decoder_selections WHERE run_id = ? ORDER BY model, domain, view;

-- name: decoder_predictions_for
SELECT world_id, domain, pair_id, p_s1, correct, log_loss, candidate FROM decoder_predictions
WHERE run_id = ? AND model = ? AND view = ? AND defense = 'none' ORDER BY world_id LIMIT ?;

-- name: decoding_runs
SELECT DISTINCT r.run_id, r.started_at, r.parameters FROM runs r JOIN recovery_results x ON x.run_id = r.run_id
WHERE r.dataset_id = ? ORDER BY r.started_at DESC, r.run_id DESC;

-- name: utility_runs
SELECT DISTINCT r.run_id, r.started_at, r.parameters FROM runs r JOIN utility_results u ON u.run_id = r.run_id
WHERE r.dataset_id = ? ORDER BY r.started_at DESC, r.run_id DESC;

-- name: utility_results
SELECT model, view, task, profile, scope, mean_cost, ci_low, ci_high, oracle_cost, coverage, routed_error,
       clarification_rate, fallback_rate, n
FROM utility_results WHERE run_id = ? ORDER BY model, view, task, profile, scope;

-- name: utility_differences
SELECT model, view_a, view_b, task, profile, difference, ci_low, ci_high, noninferior, n
FROM utility_differences WHERE run_id = ? ORDER BY model, view_a, task, profile;

-- name: utility_policies
SELECT model, domain, view, task, profile, policy, review_factor, val_cost, n_candidates
FROM utility_policies WHERE run_id = ? ORDER BY model, domain, view, task, profile;

-- name: front_points
SELECT task, profile, model, view, recovery, recovery_ci_low, recovery_ci_high, mean_cost, cost_ci_low,
       cost_ci_high, nondominated_models, nondominated_all
FROM front_points WHERE run_id = ? ORDER BY task, profile, model, view;

-- name: policy_actions_for
SELECT world_id, domain, pair_id, available, plan, check_name, check_answer, final_action, cost, oracle_cost, policy
FROM policy_actions WHERE run_id = ? AND model = ? AND view = ? AND task = ? AND profile = ?
ORDER BY world_id LIMIT ?;

-- name: front_runs
SELECT DISTINCT r.run_id, r.started_at, r.parameters FROM runs r JOIN front_points f ON f.run_id = r.run_id
WHERE r.dataset_id = ? ORDER BY r.started_at DESC, r.run_id DESC;

-- name: recipient_models_for
SELECT model, domain, view, policy, spec FROM recipient_models
WHERE run_id = ? AND model = ? ORDER BY domain, view, policy;

-- name: defense_runs
SELECT DISTINCT r.run_id, r.started_at, r.parameters FROM runs r JOIN defense_results d ON d.run_id = r.run_id
WHERE r.dataset_id = ? ORDER BY r.started_at DESC, r.run_id DESC;

-- name: defense_results
SELECT model, defense, method, seed, accuracy, ci_low, ci_high, log_loss, n, diff_vs_native, diff_ci_low,
       diff_ci_high, coverage, fallbacks, plan_agreement, plan_comparisons, max_abs_cost_diff
FROM defense_results WHERE run_id = ? ORDER BY model, defense;

-- name: learned_wcpq
SELECT model, domain, defense, budget, js_weight, seed, proxy, pool, deployed, guarded, available, covered,
       max_cost_increase
FROM learned_wcpq WHERE run_id = ? ORDER BY model, defense, domain;

-- name: defense_costs
SELECT model, defense, recipient, task, profile, mean_cost, ci_low, ci_high, n
FROM defense_costs WHERE run_id = ? ORDER BY model, defense, recipient, task, profile;

-- name: defense_release_of
SELECT defense, probabilities, confidence, codeword FROM defense_releases
WHERE run_id = ? AND model = ? AND world_id = ? ORDER BY defense;

-- name: defense_worlds
SELECT world_id, domain, codeword FROM defense_releases
WHERE run_id = ? AND model = ? AND defense = 'wcpq' AND split = 'test' ORDER BY world_id LIMIT ?;

-- name: native_response_of
SELECT w.world_id, w.pair_id, w.domain, w.split, w.coarse, w.mechanism, w.hypothesis_0, w.hypothesis_1,
       w.recipient_role, w.candidate_order, w.request, w.intake_channel, w.operating_window, w.case_context,
       CASE WHEN r.status = 'ok' AND r.valid THEN 'ok' ELSE 'unavailable' END AS status,
       CASE WHEN r.status = 'ok' AND r.valid THEN r.choice END AS choice,
       CASE WHEN r.status = 'ok' AND r.valid THEN r.probabilities END AS probabilities,
       CASE WHEN r.status = 'ok' AND r.valid THEN r.confidence END AS confidence
FROM worlds w LEFT JOIN responses r ON r.dataset_id = w.dataset_id AND r.world_id = w.world_id AND r.model = ?
WHERE w.dataset_id = ? AND w.world_id = ?;

-- name: run_result_kinds
-- Per audit run of a dataset, the audits that stored results (a run's parameters name the audits
-- it asked for; QuasiLeak without a corpus stores none).
SELECT r.run_id, k.kind FROM runs r JOIN (
    SELECT DISTINCT run_id, 'refusal' AS kind FROM refusal_results
    UNION ALL SELECT DISTINCT run_id, 'decoding' FROM recovery_results
    UNION ALL SELECT DISTINCT run_id, 'utility' FROM utility_results
    UNION ALL SELECT DISTINCT run_id, 'defenses' FROM defense_results
    UNION ALL SELECT DISTINCT run_id, 'quasileak' FROM ql_scores) k ON k.run_id = r.run_id
WHERE r.dataset_id = ? ORDER BY r.run_id, k.kind;

-- name: all_runs
-- Audit runs with how many kinds of results each holds (the report defaults to the newest of
-- the most complete ones).
SELECT r.run_id, r.dataset_id, r.kind, r.parameters, r.dataset_fingerprint, r.code_version,
       r.test_used_for_selection, r.started_at, r.finished_at,
       (EXISTS (SELECT 1 FROM refusal_results x WHERE x.run_id = r.run_id))::INTEGER
       + (EXISTS (SELECT 1 FROM recovery_results x WHERE x.run_id = r.run_id))::INTEGER
       + (EXISTS (SELECT 1 FROM utility_results x WHERE x.run_id = r.run_id))::INTEGER
       + (EXISTS (SELECT 1 FROM defense_results x WHERE x.run_id = r.run_id))::INTEGER
       + (EXISTS (SELECT 1 FROM ql_scores x WHERE x.run_id = r.run_id))::INTEGER AS n_results
FROM runs r WHERE r.kind = 'audit' ORDER BY r.started_at DESC, r.run_id DESC;

-- name: decoder_config_scores_for
SELECT domain, view, split, world_id, p_s1 FROM decoder_config_scores
WHERE run_id = ? AND model = ? AND list_contains(?, view) ORDER BY domain, view, split, world_id;

-- name: decoder_configs_for
SELECT view, config, family, name FROM decoder_configs WHERE run_id = ? ORDER BY view, config;

-- name: decoder_config_scores_of_view
SELECT model, domain, view, split, world_id, p_s1 FROM decoder_config_scores
WHERE run_id = ? AND view = ? ORDER BY model, domain, split, world_id;

-- name: decoder_predictions_of_view
-- The selected attacker's test predictions of one view for every model of a run (native releases).
SELECT model, world_id, domain, pair_id, correct, log_loss FROM decoder_predictions
WHERE run_id = ? AND view = ? AND defense = 'none' ORDER BY model, world_id;

-- name: decoder_predictions_by_class
-- The selected attacker's test predictions of one view for every model of a run, with each world's
-- decision class (its coarse class T: both worlds of a pair share it).
SELECT p.model, p.world_id, p.domain, w.coarse AS class, p.pair_id, p.correct FROM decoder_predictions p
JOIN worlds w ON w.dataset_id = p.dataset_id AND w.world_id = p.world_id
WHERE p.run_id = ? AND p.view = ? AND p.defense = 'none' ORDER BY p.model, p.domain, class, p.world_id;

-- name: decoding_worlds
-- Per model a decoding run decoded and planned world of its dataset: split, pair, labels and the
-- released choice as decoding_input has them (no response, unavailable or invalid: unavailable).
SELECT m.model, w.world_id, w.pair_id, w.domain, w.split, w.coarse, w.mechanism, w.hypothesis_0, w.hypothesis_1,
       CASE WHEN r.status = 'ok' AND r.valid THEN 'ok' ELSE 'unavailable' END AS status,
       CASE WHEN r.status = 'ok' AND r.valid THEN r.choice END AS choice
FROM (SELECT DISTINCT dataset_id, model FROM decoder_predictions WHERE run_id = ? AND defense = 'none') m
JOIN worlds w ON w.dataset_id = m.dataset_id
LEFT JOIN responses r ON r.dataset_id = w.dataset_id AND r.world_id = w.world_id AND r.model = m.model
ORDER BY m.model, w.world_id;

-- name: runs_with_config_scores
SELECT DISTINCT run_id FROM decoder_configs WHERE dataset_id = ?;

-- ------------------------------------------------------------------------------ collection

-- name: collect_worlds
SELECT world_id, domain, split, recipient_role, candidate_order, request, intake_channel, operating_window,
       case_context, diagnostic_note
FROM worlds WHERE dataset_id = ? ORDER BY world_id;

-- name: collect_stored_native
SELECT world_id, (status <> 'ok' OR NOT valid) AS replaceable FROM responses WHERE dataset_id = ? AND model = ?;

-- name: collect_stored_refusal
SELECT world_id, (status <> 'ok' OR NOT coalesce(valid, TRUE)) AS replaceable
FROM refusal_responses WHERE dataset_id = ? AND model = ?;

-- name: collect_insert_collection
INSERT INTO collections (collection_id, dataset_id, model, probe, transport, endpoint, endpoint_model, settings,
                         instruction_version, ingest_id, started_at, skipped_existing)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: collect_update_collection
UPDATE collections SET asked = asked + ?, stored = stored + ?, valid = valid + ?, invalid = invalid + ?,
                       unavailable = unavailable + ?, finished_at = ?, stopped = ?
WHERE collection_id = ?;

-- name: collect_update_ingest
UPDATE ingests SET sha256 = ?, n_lines = n_lines + ?, n_accepted = n_accepted + ?, n_invalid = n_invalid + ?,
                   finished_at = ?
WHERE ingest_id = ?;

-- name: collect_history_native
INSERT INTO response_history (dataset_id, model, probe, world_id, status, choice, probabilities, confidence,
                              scores, valid, invalid_reason, ingest_id, line_no, replaced_at, replaced_by)
SELECT dataset_id, model, 'native', world_id, status, choice, probabilities, confidence, NULL, valid,
       invalid_reason, ingest_id, line_no, ?, ?
FROM responses WHERE dataset_id = ? AND model = ? AND list_contains(?, world_id);

-- name: collect_delete_native
DELETE FROM responses WHERE dataset_id = ? AND model = ? AND list_contains(?, world_id);

-- name: collect_history_refusal
INSERT INTO response_history (dataset_id, model, probe, world_id, status, choice, probabilities, confidence,
                              scores, valid, invalid_reason, ingest_id, line_no, replaced_at, replaced_by)
SELECT dataset_id, model, 'refusal', world_id, status, choice, NULL, NULL, scores, valid, invalid_reason,
       ingest_id, line_no, ?, ?
FROM refusal_responses WHERE dataset_id = ? AND model = ? AND list_contains(?, world_id);

-- name: collect_delete_refusal
DELETE FROM refusal_responses WHERE dataset_id = ? AND model = ? AND list_contains(?, world_id);

-- name: collections
SELECT collection_id, model, probe, transport, endpoint, endpoint_model, settings, instruction_version,
       started_at, finished_at, asked, stored, valid, invalid, unavailable, skipped_existing, stopped
FROM collections WHERE dataset_id = ? ORDER BY started_at DESC, collection_id DESC;

-- name: collection_latency
SELECT collection_id, count(*) AS calls,
       quantile_cont(latency_ms, 0.5) AS p50_ms, quantile_cont(latency_ms, 0.9) AS p90_ms,
       quantile_cont(latency_ms, 0.99) AS p99_ms, max(latency_ms) AS max_ms
FROM collection_calls WHERE dataset_id = ? GROUP BY collection_id;

-- name: collection_outcomes
SELECT outcome, coalesce(reason, '') AS reason, count(*) AS calls
FROM collection_calls WHERE collection_id = ? GROUP BY outcome, reason ORDER BY calls DESC, outcome, reason;

-- name: collection_calls_of
SELECT world_id, attempt, request_sha256, http_status, latency_ms, outcome, reason, called_at
FROM collection_calls WHERE collection_id = ? ORDER BY called_at, world_id, attempt;

-- name: collection_call
SELECT world_id, attempt, request_sha256, http_status, latency_ms, raw_answer, outcome, reason, called_at
FROM collection_calls WHERE collection_id = ? AND world_id = ? ORDER BY attempt;

-- name: response_history
SELECT model, probe, world_id, status, choice, valid, invalid_reason, replaced_at, replaced_by
FROM response_history WHERE dataset_id = ? ORDER BY replaced_at DESC, model, world_id;

-- name: collection_dataset_latency
SELECT count(*) AS calls, quantile_cont(latency_ms, 0.5) AS p50_ms FROM collection_calls WHERE dataset_id = ?;

-- name: collection_worlds_of
SELECT world_id, count(*) AS attempts, arg_max(outcome, attempt) AS outcome
FROM collection_calls WHERE collection_id = ? GROUP BY world_id ORDER BY world_id;

-- name: collection_world
SELECT world_id, domain, split, recipient_role, candidate_order, request, intake_channel, operating_window,
       case_context, diagnostic_note
FROM worlds WHERE dataset_id = ? AND world_id = ?;

-- name: collection_no_logprobs
-- Per letters-mode run (openai, --answer letters) of a dataset: its valid answers, and those whose chat
-- completion carried no top_logprobs for the first token (the CLI's "no logprobs" warning; not stored as a count).
SELECT c.collection_id, count(*) AS answers,
       count(*) FILTER (WHERE coalesce(json_array_length(json_extract(k.raw_answer,
                              '$.choices[0].logprobs.content[0].top_logprobs')), 0) = 0) AS no_logprobs
FROM collections c JOIN collection_calls k ON k.collection_id = c.collection_id
WHERE c.dataset_id = ? AND c.transport = 'openai' AND json_extract_string(c.settings, '$.answer') = 'letters'
  AND k.outcome = 'valid' AND json_valid(k.raw_answer)
GROUP BY c.collection_id ORDER BY c.collection_id;

-- name: collection_totals
SELECT probe, model, count(*) AS runs, sum(asked) AS asked, sum(stored) AS stored, sum(valid) AS valid,
       sum(invalid) AS invalid, sum(unavailable) AS unavailable, count(stopped) AS stopped_runs
FROM collections WHERE dataset_id = ? GROUP BY probe, model ORDER BY probe, model;

-- name: real_models
SELECT model FROM models WHERE dataset_id = ? AND NOT simulated ORDER BY model;

-- name: dataset_ontology
SELECT d.sha256, o.body, o.source, d.ingested_at
FROM dataset_ontologies d JOIN ontologies o ON o.sha256 = d.sha256 WHERE d.dataset_id = ?;

-- name: dataset_world_count
SELECT count(*) AS n FROM worlds WHERE dataset_id = ?;

-- name: insert_ontology_if_absent
INSERT INTO ontologies (sha256, body, source)
SELECT ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM ontologies WHERE sha256 = ?);

-- name: set_dataset_ontology
INSERT INTO dataset_ontologies (dataset_id, sha256, ingested_at) VALUES (?, ?, ?)
ON CONFLICT (dataset_id) DO UPDATE SET sha256 = excluded.sha256, ingested_at = excluded.ingested_at;

-- name: dataset_ontologies
SELECT d.dataset_id, d.sha256, o.source, d.ingested_at
FROM dataset_ontologies d JOIN ontologies o ON o.sha256 = d.sha256 ORDER BY d.dataset_id;

-- name: run_dataset
SELECT dataset_id FROM runs WHERE run_id = ?;

-- name: corpus_attributes
SELECT policy FROM ql_documents WHERE dataset_id = ? ORDER BY doc_id LIMIT 1;

-- name: stored_lines_of_ingest
-- Line numbers an ingest stored (ingest ids are unique across kinds); a retry of the same file skips them.
SELECT line_no FROM worlds WHERE ingest_id = ?
UNION ALL SELECT line_no FROM responses WHERE ingest_id = ?
UNION ALL SELECT line_no FROM refusal_responses WHERE ingest_id = ?
UNION ALL SELECT line_no FROM ql_documents WHERE ingest_id = ?
UNION ALL SELECT line_no FROM ql_predictions WHERE ingest_id = ?;

-- name: newest_audit_run
-- The dataset's audit runs, newest first, and whether each finished (a run stored in stages has no
-- finished_at until its last stage is stored): warehouse.compare takes the newest finished one.
SELECT run_id, finished_at IS NOT NULL AS finished FROM runs WHERE dataset_id = ? AND kind = 'audit'
ORDER BY started_at DESC, run_id DESC;

-- name: run_result_tables
-- Every table that holds a run's results (a run_id column), for comparing two runs.
SELECT DISTINCT table_name FROM information_schema.columns
WHERE column_name = 'run_id' AND table_name <> 'runs' ORDER BY table_name;

-- name: bulk_native_responses
-- The shaped lines of one JSON Lines block (``_block``, warehouse.bulk._lines_table: line_no,
-- line with its ending, shaped, colons), parsed by DuckDB's JSON parser (``from_json``, the one
-- its JSON reader uses) in one vectorised pass into NativeResponse's six fields, the object of
-- probabilities as DuckDB writes JSON back (minified). A shaped line (warehouse.bulk.PLAIN_LINE:
-- the six fields, each a plain string, number, null or flat object of numbers) is valid JSON, and
-- DuckDB and pydantic read it alike, save a repeated key (DuckDB reads the first, pydantic the
-- last): warehouse.bulk counts the line's colons to rule that out and applies the rules. The
-- parse sits in a query of its own on purpose: under a filter or a second projection DuckDB's
-- optimizer inlines it and parses each line once per field read.
SELECT line_no, colons,
       unnest(from_json(line, '{"model": "VARCHAR", "world_id": "VARCHAR", "status": "VARCHAR", "choice": "VARCHAR",
                                "probabilities": "JSON", "confidence": "DOUBLE"}'))
FROM _block WHERE shaped;

-- name: stored_response_keys
-- The (model, world_id) keys of a dataset's stored native responses: the bulk ingest's KeyLedger
-- starts from them. Parameters: dataset_id.
SELECT model, world_id FROM responses WHERE dataset_id = ?

-- name: audit_inputs
-- What a dataset holds for the audits: the models with native or refusal responses, and its
-- QuasiLeak predictions.
SELECT (SELECT coalesce(list(DISTINCT model ORDER BY model), []::VARCHAR[]) FROM (SELECT model FROM responses WHERE dataset_id = ?
                                                       UNION SELECT model FROM refusal_responses WHERE dataset_id = ?)) AS models,
       (SELECT count(*) FROM ql_predictions WHERE dataset_id = ?) AS predictions;

-- name: restated_worlds
-- Lines of an ingest whose world_id the dataset already holds (``_restated``: rows shaped as
-- ``worlds``): each line, the ingest that stored its key, and whether every field equals the
-- stored world's (a file ingested again after a fix restates the lines stored the first time).
-- Parameters: dataset_id.
SELECT r.line_no, s.ingest_id AS stored_by,
       coalesce(r.pair_id = s.pair_id AND r.domain = s.domain AND r.split = s.split AND r.coarse = s.coarse
                AND r.mechanism = s.mechanism AND r.hypothesis_0 = s.hypothesis_0
                AND r.hypothesis_1 = s.hypothesis_1 AND r.recipient_role = s.recipient_role
                AND r.candidate_order = s.candidate_order AND r.request = s.request
                AND r.intake_channel = s.intake_channel AND r.operating_window = s.operating_window
                AND r.case_context = s.case_context AND r.diagnostic_note = s.diagnostic_note, false) AS identical
FROM _restated r JOIN worlds s ON s.world_id = r.world_id
WHERE s.dataset_id = ?;

-- name: restated_responses
-- As restated_worlds, for native responses keyed by (model, world_id). The stored text of
-- probabilities depends on the path that validated the line (the bulk path writes JSON back
-- minified, 1 stays 1; pydantic writes 1.0), so the maps are compared as maps of numbers, their
-- entries sorted; text that is no such map (none is stored) is compared as text.
-- Parameters: dataset_id.
SELECT r.line_no, s.ingest_id AS stored_by,
       coalesce(r.status = s.status AND r.choice IS NOT DISTINCT FROM s.choice
                AND r.confidence IS NOT DISTINCT FROM s.confidence
                AND CASE WHEN r.probabilities IS NOT DISTINCT FROM s.probabilities THEN true    -- the parse only when needed
                         ELSE list_sort(map_entries(try(json_transform(r.probabilities, '"MAP(VARCHAR, DOUBLE)"'))))
                              = list_sort(map_entries(try(json_transform(s.probabilities, '"MAP(VARCHAR, DOUBLE)"'))))
                    END, false) AS identical
FROM _restated r JOIN responses s ON s.model = r.model AND s.world_id = r.world_id
WHERE s.dataset_id = ?;

-- name: restated_refusal_responses
-- As restated_responses, for refusal responses (their scores compared as maps of numbers).
-- Parameters: dataset_id.
SELECT r.line_no, s.ingest_id AS stored_by,
       coalesce(r.status = s.status AND r.choice IS NOT DISTINCT FROM s.choice
                AND CASE WHEN r.scores IS NOT DISTINCT FROM s.scores THEN true
                         ELSE list_sort(map_entries(try(json_transform(r.scores, '"MAP(VARCHAR, DOUBLE)"'))))
                              = list_sort(map_entries(try(json_transform(s.scores, '"MAP(VARCHAR, DOUBLE)"'))))
                    END, false) AS identical
FROM _restated r JOIN refusal_responses s ON s.model = r.model AND s.world_id = r.world_id
WHERE s.dataset_id = ?;

-- name: restated_ql_documents
-- As restated_worlds, for corpus documents keyed by doc_id: the document's fields and its groups
-- (``_restated_groups``: rows shaped as ``ql_groups``, with the line_no of their document) in
-- order. Parameters: dataset_id (twice).
SELECT r.line_no, s.ingest_id AS stored_by,
       coalesce(r.split = s.split AND r.context_id = s.context_id AND r.recipient IS NOT DISTINCT FROM s.recipient
                AND r.purpose IS NOT DISTINCT FROM s.purpose AND r.text = s.text AND r.profile = s.profile
                AND r.policy = s.policy AND r.distractors = s.distractors
                AND (SELECT list((g.attribute, g.cues) ORDER BY g.group_index) FROM _restated_groups g
                     WHERE g.line_no = r.line_no)
                    IS NOT DISTINCT FROM
                    (SELECT list((g.attribute, g.cues) ORDER BY g.group_index) FROM ql_groups g
                     WHERE g.dataset_id = ? AND g.doc_id = r.doc_id), false) AS identical
FROM _restated r JOIN ql_documents s ON s.doc_id = r.doc_id
WHERE s.dataset_id = ?;

-- name: restated_ql_predictions
-- As restated_worlds, for detector predictions keyed by (detector, doc_id). Parameters: dataset_id.
SELECT r.line_no, s.ingest_id AS stored_by, coalesce(r.groups = s.groups, false) AS identical
FROM _restated r JOIN ql_predictions s ON s.detector = r.detector AND s.doc_id = r.doc_id
WHERE s.dataset_id = ?;

-- name: quarantined_csv_rows
-- The quarantined CSV rows of a dataset's kind that other ingests left, except key conflicts
-- (``duplicate ...``, never cleared): their raw text (the header's line, then the row's), from which
-- the ingest registers their keys as ``quarantined_csv_keys`` for quarantined_records.
-- Parameters: dataset_id, kind, ingest_id.
SELECT r.ingest_id, r.line_no, r.raw_text
FROM rejects r JOIN ingests i USING (ingest_id)
WHERE r.dataset_id = ? AND r.kind = ? AND r.ingest_id <> ? AND i.file_format = 'csv'
  AND r.reason NOT LIKE 'duplicate %';

-- name: quarantined_records
-- The quarantined lines of a dataset's kind that other ingests left, except key conflicts, each with
-- its record as a JSON object: its raw text (JSON Lines and Parquet lines), or for a CSV row the object
-- of its key cells in ``quarantined_csv_keys`` (ingest_id, line_no, record: read by the ingest from the
-- row's text, whose first line is the header); and the ingest's --model (a response line without a
-- model took it). Kept, for this connection, as the table resolved_rejects_<kind> read.
-- Parameters: dataset_id, kind, ingest_id.
CREATE OR REPLACE TEMP TABLE quarantined_records AS
SELECT r.ingest_id, r.line_no, coalesce(c.record, r.raw_text) AS record, i.model AS ingest_model
FROM rejects r LEFT JOIN ingests i USING (ingest_id) LEFT JOIN quarantined_csv_keys c USING (ingest_id, line_no)
WHERE r.dataset_id = ? AND r.kind = ? AND r.ingest_id <> ?
  AND r.reason NOT LIKE 'duplicate %';    -- a conflict with a stored value: storing the key fixes nothing

-- name: drop_quarantined_records
DROP TABLE IF EXISTS quarantined_records;

-- name: resolved_rejects_worlds
-- Clear the quarantined lines of earlier ingests (``quarantined_records``) whose world_id this ingest
-- stored: their problem is fixed. Parameters: ingest_id.
DELETE FROM rejects
WHERE (ingest_id, line_no) IN (
    SELECT ingest_id, line_no FROM quarantined_records
    WHERE CASE WHEN json_valid(record) THEN json_extract_string(record, '$.world_id') END
          IN (SELECT world_id FROM worlds WHERE ingest_id = ?))
RETURNING line_no;

-- name: resolved_rejects_responses
-- As resolved_rejects_worlds, for native responses (a line without a model took its ingest's
-- --model). Parameters: ingest_id.
DELETE FROM rejects
WHERE (ingest_id, line_no) IN (
    SELECT ingest_id, line_no FROM quarantined_records
    WHERE (coalesce(CASE WHEN json_valid(record) THEN json_extract_string(record, '$.model') END, ingest_model),
           CASE WHEN json_valid(record) THEN json_extract_string(record, '$.world_id') END)
          IN (SELECT (model, world_id) FROM responses WHERE ingest_id = ?))
RETURNING line_no;

-- name: resolved_rejects_refusal
-- As resolved_rejects_responses, for refusal responses. Parameters: ingest_id.
DELETE FROM rejects
WHERE (ingest_id, line_no) IN (
    SELECT ingest_id, line_no FROM quarantined_records
    WHERE (coalesce(CASE WHEN json_valid(record) THEN json_extract_string(record, '$.model') END, ingest_model),
           CASE WHEN json_valid(record) THEN json_extract_string(record, '$.world_id') END)
          IN (SELECT (model, world_id) FROM refusal_responses WHERE ingest_id = ?))
RETURNING line_no;

-- name: resolved_rejects_corpus
-- As resolved_rejects_worlds, for corpus documents. Parameters: ingest_id.
DELETE FROM rejects
WHERE (ingest_id, line_no) IN (
    SELECT ingest_id, line_no FROM quarantined_records
    WHERE CASE WHEN json_valid(record) THEN json_extract_string(record, '$.doc_id') END
          IN (SELECT doc_id FROM ql_documents WHERE ingest_id = ?))
RETURNING line_no;

-- name: resolved_rejects_predictions
-- As resolved_rejects_worlds, for detector predictions. Parameters: ingest_id.
DELETE FROM rejects
WHERE (ingest_id, line_no) IN (
    SELECT ingest_id, line_no FROM quarantined_records
    WHERE (CASE WHEN json_valid(record) THEN json_extract_string(record, '$.detector') END,
           CASE WHEN json_valid(record) THEN json_extract_string(record, '$.doc_id') END)
          IN (SELECT (detector, doc_id) FROM ql_predictions WHERE ingest_id = ?))
RETURNING line_no;

-- name: open_rejects_of_kind
-- How many quarantined lines of a dataset's kind other ingests left (none: nothing to clear).
-- Parameters: dataset_id, kind, ingest_id.
SELECT count(*) AS n FROM rejects WHERE dataset_id = ? AND kind = ? AND ingest_id <> ?;

-- name: ql_detector_predictions
-- How many prediction lines a dataset holds per detector (the detectors `qlb quasileak forget` can forget).
SELECT detector, count(*) AS n FROM ql_predictions WHERE dataset_id = ? GROUP BY detector ORDER BY detector;

-- name: ql_forget_detector
-- A detector's stored predictions of a dataset, removed (its registration, with its simulated flag, stays for the
-- runs that scored it).
DELETE FROM ql_predictions WHERE dataset_id = ? AND detector = ?;
