CREATE TABLE agent_sessions (
	id VARCHAR(36) NOT NULL, 
	parent_session_id VARCHAR(36), 
	session_type INTEGER DEFAULT '0' NOT NULL, 
	title VARCHAR(200), 
	agent_name VARCHAR(64), 
	created_at DATETIME NOT NULL, 
	updated_at DATETIME NOT NULL, 
	PRIMARY KEY (id)
);
CREATE INDEX ix_agent_sessions_activity ON agent_sessions (updated_at, id);
CREATE INDEX ix_agent_sessions_agent_name ON agent_sessions (agent_name);
CREATE INDEX ix_agent_sessions_parent_session_id ON agent_sessions (parent_session_id);
CREATE TABLE raw_messages (
	id VARCHAR(36) NOT NULL, 
	session_id VARCHAR NOT NULL, 
	request_id VARCHAR(36) NOT NULL, 
	sequence INTEGER NOT NULL, 
	role INTEGER NOT NULL, 
	content TEXT NOT NULL, 
	tool_name VARCHAR, 
	message_json TEXT NOT NULL, 
	metadata_json TEXT NOT NULL, 
	tags_json TEXT NOT NULL, 
	started_at DATETIME NOT NULL, 
	completed_at DATETIME NOT NULL, 
	duration_ns INTEGER NOT NULL, 
	reasoning_started_at DATETIME, 
	reasoning_completed_at DATETIME, 
	reasoning_duration_ns INTEGER, 
	content_started_at DATETIME, 
	content_completed_at DATETIME, 
	content_duration_ns INTEGER, 
	input_tokens INTEGER, 
	output_tokens INTEGER, 
	cache_read_tokens INTEGER, 
	cache_write_tokens INTEGER, 
	reasoning_tokens INTEGER, 
	created_at DATETIME NOT NULL, 
	updated_at DATETIME NOT NULL, 
	PRIMARY KEY (id)
);
CREATE INDEX ix_raw_messages_request_id ON raw_messages (request_id);
CREATE INDEX ix_raw_messages_session_id ON raw_messages (session_id);
CREATE UNIQUE INDEX ux_raw_session_sequence ON raw_messages (session_id, sequence);
CREATE TABLE session_snapshots (
	id VARCHAR(36) NOT NULL, 
	session_id VARCHAR NOT NULL, 
	version INTEGER NOT NULL, 
	compacted_through_sequence INTEGER NOT NULL, 
	message_json TEXT NOT NULL, 
	created_at DATETIME NOT NULL, 
	updated_at DATETIME NOT NULL, 
	PRIMARY KEY (id)
);
CREATE INDEX ix_session_snapshots_session_id ON session_snapshots (session_id);
CREATE UNIQUE INDEX ux_snapshot_session_version ON session_snapshots (session_id, version);
