-- "This error (or stack) signature → its past failures" looks evidence up by
-- signature prefix (the indexer's PastFailures), whatever key its group has.
CREATE INDEX evidence_by_error_signature ON evidence (error_signature text_pattern_ops);
CREATE INDEX evidence_by_stack_signature ON evidence (stack_signature text_pattern_ops);
