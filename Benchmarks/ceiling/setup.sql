-- The rows one ingest step finds: an app, 100 devices, a type, 1,000 active activities.
INSERT INTO app (bundleId, name, createdAt) VALUES ('com.bench', 'Bench', 0) ON CONFLICT DO NOTHING;
INSERT INTO device (id, name, createdAt) SELECT 'D' || n, 'Device ' || n, 0 FROM generate_series(1, 100) n ON CONFLICT DO NOTHING;
INSERT INTO activityType (bundleId, name, body) VALUES ('com.bench', 'Bench', '{"name":"Bench","bundleId":"com.bench"}') ON CONFLICT DO NOTHING;
INSERT INTO activity (id, bundleId, deviceId, attributesType, state, key, deadline, relevanceScore, startTime, createdAt, updatedAt, body, channelId)
SELECT 'A' || n, 'com.bench', 'D' || (n % 100 + 1), 'Bench', 'active', NULL, 1e10, 0, n, n, n,
  repeat('{"id":"A' || n || '","state":"active","content":{"state":{"v":1}}}', 6), NULL
FROM generate_series(1, 1000) n ON CONFLICT DO NOTHING;
