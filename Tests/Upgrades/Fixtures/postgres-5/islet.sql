--
-- PostgreSQL database dump
--


-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: activity; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.activity (
    id text NOT NULL,
    bundleid text NOT NULL,
    deviceid text NOT NULL,
    attributestype text NOT NULL,
    state text NOT NULL,
    key text,
    deadline double precision,
    relevancescore double precision NOT NULL,
    starttime double precision NOT NULL,
    createdat double precision NOT NULL,
    updatedat double precision NOT NULL,
    body text NOT NULL,
    channelid text,
    listingscore double precision GENERATED ALWAYS AS ((- relevancescore)) STORED
)
WITH (fillfactor='70');


--
-- Name: activitytype; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.activitytype (
    bundleid text NOT NULL,
    name text NOT NULL,
    body text NOT NULL
);


--
-- Name: apikey; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.apikey (
    hash text NOT NULL,
    bundleid text,
    deviceid text,
    createdat double precision NOT NULL
);


--
-- Name: app; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.app (
    bundleid text NOT NULL,
    name text NOT NULL,
    createdat double precision NOT NULL,
    strictpushes boolean DEFAULT false NOT NULL,
    deliverypaused boolean DEFAULT false NOT NULL
);


--
-- Name: appsettings; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.appsettings (
    deviceid text NOT NULL,
    bundleid text NOT NULL,
    activitiesenabled boolean NOT NULL,
    frequentupdates boolean NOT NULL
);


--
-- Name: channel; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.channel (
    id text NOT NULL,
    bundleid text NOT NULL,
    storagepolicy bigint NOT NULL,
    createdat double precision NOT NULL,
    message text,
    messageat double precision,
    messageexpiresat double precision,
    environment text
);


--
-- Name: delivery; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.delivery (
    id bigint NOT NULL,
    orderkey text NOT NULL,
    activityid text,
    bundleid text NOT NULL,
    deviceid text,
    channelid text,
    event text NOT NULL,
    payload text NOT NULL,
    alert boolean NOT NULL,
    expiration double precision,
    state text NOT NULL,
    attempts bigint NOT NULL,
    nextattemptat double precision NOT NULL,
    leaseuntil double precision,
    createdat double precision NOT NULL,
    finishedat double precision,
    apnsid text NOT NULL
);


--
-- Name: delivery_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.delivery_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: delivery_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.delivery_id_seq OWNED BY public.delivery.id;


--
-- Name: deliverycredential; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.deliverycredential (
    bundleid text NOT NULL,
    environment text NOT NULL,
    teamid text NOT NULL,
    keyid text NOT NULL,
    privatekey text NOT NULL,
    url text,
    cacertificate text,
    createdat double precision NOT NULL,
    failure text
);


--
-- Name: device; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.device (
    id text NOT NULL,
    name text NOT NULL,
    createdat double precision NOT NULL
);


--
-- Name: event; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.event (
    id bigint NOT NULL,
    "time" double precision NOT NULL,
    type text NOT NULL,
    bundleid text NOT NULL,
    deviceid text NOT NULL,
    activityid text,
    data text NOT NULL
);


--
-- Name: event_id; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.event_id
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: islet_migration; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.islet_migration (
    version integer NOT NULL,
    name text NOT NULL,
    appliedat timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: layout; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.layout (
    bundleid text NOT NULL,
    attributestype text NOT NULL,
    body text NOT NULL,
    revision bigint NOT NULL,
    updatedat double precision NOT NULL
);


--
-- Name: phoneactivity; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.phoneactivity (
    activityid text NOT NULL,
    bundleid text NOT NULL,
    deviceid text NOT NULL,
    environment text NOT NULL,
    channelid text,
    state text NOT NULL,
    budgeted text NOT NULL
);


--
-- Name: phonetoken; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.phonetoken (
    token text NOT NULL,
    kind text NOT NULL,
    bundleid text NOT NULL,
    deviceid text NOT NULL,
    attributestype text,
    activityid text,
    environment text NOT NULL,
    createdat double precision NOT NULL,
    retiredat double precision,
    retiredreason text,
    appletimestamp double precision,
    lastat double precision,
    laststatus bigint,
    lastreason text
);


--
-- Name: providerkey; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.providerkey (
    keyid text NOT NULL,
    teamid text NOT NULL,
    bundleid text NOT NULL,
    publickey text NOT NULL,
    createdat double precision NOT NULL
);


--
-- Name: pushtoken; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.pushtoken (
    token text NOT NULL,
    kind text NOT NULL,
    activityid text,
    deviceid text NOT NULL,
    bundleid text NOT NULL,
    createdat double precision NOT NULL,
    retiredat double precision,
    retiredreason text
);


--
-- Name: writeprobe; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.writeprobe (
    node text NOT NULL,
    at double precision NOT NULL
);


--
-- Name: delivery id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.delivery ALTER COLUMN id SET DEFAULT nextval('public.delivery_id_seq'::regclass);


--
-- Data for Name: activity; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.activity VALUES ('C2EF1400-67D6-4EC1-B737-1BF4C6E3C51E', 'com.example.upgrade', 'default', 'Ride', 'active', NULL, 1795805365.2124624, 0, 1795776565.2124624, 1795776565.2124624, 1795776565.2591157, '{"activityState":"active","attributes":{"route":"active"},"attributesType":"Ride","autoEndAt":1795805365.2124624,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":6}},"createdAt":1795776565.2124624,"device":"default","id":"C2EF1400-67D6-4EC1-B737-1BF4C6E3C51E","lastUpdateTimestamp":1795776565.2591157,"startedAt":1795776565.2124624,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('AED2987B-F521-4B06-9E22-B87970A8071C', 'com.example.upgrade', 'default', 'Ride', 'ended', NULL, 1795790965.3294482, 0, 1795776565.277485, 1795776565.277485, 1795776565.3294482, '{"activityState":"ended","attributes":{"route":"ended"},"attributesType":"Ride","autoEndAt":1795805365.277485,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":0}},"createdAt":1795776565.277485,"device":"default","dismissAt":1795790965.3294482,"endedAt":1795776565.3294482,"id":"AED2987B-F521-4B06-9E22-B87970A8071C","lastUpdateTimestamp":1795776565.3294482,"startedAt":1795776565.277485,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('8D34EE1C-EFA0-48DF-92DB-E7D0A9C5EB1E', 'com.example.upgrade', 'phone-2', 'Ride', 'dismissed', NULL, NULL, 0, 1795776565.3504992, 1795776565.3504992, 1795776565.376486, '{"activityState":"dismissed","attributes":{"route":"dismissed"},"attributesType":"Ride","autoEndAt":1795805365.3504992,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776565.3504992,"device":"phone-2","dismissAt":1795776565.376486,"dismissedAt":1795776565.376486,"endedAt":1795776565.376486,"id":"8D34EE1C-EFA0-48DF-92DB-E7D0A9C5EB1E","startedAt":1795776565.3504992,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('660171B2-F6DB-41FF-A9B7-788A18462F22', 'com.example.upgrade', 'default', 'Ride', 'active', 'order-7', 1795805365.3951583, 0, 1795776565.3951583, 1795776565.3951583, 1795776565.4144273, '{"activityState":"active","attributes":{"route":"key"},"attributesType":"Ride","autoEndAt":1795805365.3951583,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":2}},"createdAt":1795776565.3951583,"device":"default","id":"660171B2-F6DB-41FF-A9B7-788A18462F22","key":"order-7","lastUpdateTimestamp":1795776565.4144273,"startedAt":1795776565.3951583,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('BF8DE2A4-34C3-479B-8596-6125B9953352', 'com.example.upgrade', 'default', 'Ride', 'active', NULL, 1795805365.434957, 0, 1795776565.434957, 1795776565.434957, 1795776565.434957, '{"activityState":"active","attributes":{"route":"token"},"attributesType":"Ride","autoEndAt":1795805365.434957,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776565.434957,"device":"default","id":"BF8DE2A4-34C3-479B-8596-6125B9953352","pushToken":"b8e846dd692d1a98e5e38c77a297d22265792c21d968e4fe8516a475be693f21","pushType":"token","startedAt":1795776565.434957,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('2F36F4CB-5B1E-4702-8C08-BF2BB9618871', 'com.example.upgrade', 'phone-2', 'Ride', 'active', NULL, 1795805365.5647898, 0, 1795776565.5647898, 1795776565.5647898, 1795776565.6658792, '{"activityState":"active","attributes":{"route":"delivered"},"attributesType":"Ride","autoEndAt":1795805365.5647898,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":7}},"createdAt":1795776565.5647898,"device":"phone-2","id":"2F36F4CB-5B1E-4702-8C08-BF2BB9618871","lastUpdateTimestamp":1795776565.6658792,"startedAt":1795776565.5647898,"style":"standard"}', NULL, DEFAULT);


--
-- Data for Name: activitytype; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: apikey; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.apikey VALUES ('7bc8b1682a6b81f125fe45387fa5e17015b82bb09cfd11f59e9fb970b32f4ad9', NULL, NULL, 1795776564.7197185);
INSERT INTO public.apikey VALUES ('d015b1d74dd2e895d4ac50938b3369281d2a3cf1fba3c58ee23eb90e3b1568f0', 'com.example.upgrade', NULL, 1795776565.1413193);


--
-- Data for Name: app; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.app VALUES ('com.example.upgrade', 'Upgrade', 1795776565.1410809, false, false);


--
-- Data for Name: appsettings; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: channel; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.channel VALUES ('89J3tGbWjoVUf2fJ19qrTg==', 'com.example.upgrade', 1, 1795776565.496561, NULL, NULL, NULL, NULL);


--
-- Data for Name: delivery; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.delivery VALUES (1, 'activity:2F36F4CB-5B1E-4702-8C08-BF2BB9618871', '2F36F4CB-5B1E-4702-8C08-BF2BB9618871', 'com.example.upgrade', 'phone-2', NULL, 'start', '{"aps":{"alert":{"body":"","title":"Upgrade"},"attributes":{"islet":"2F36F4CB-5B1E-4702-8C08-BF2BB9618871","route":"delivered"},"attributes-type":"Ride","content-state":{"eta":10},"event":"start","input-push-token":1,"timestamp":1795776565}}', true, 1795805365.5647898, 'sending', 1, 1795776565.5647898, 1795776625.599859, 1795776565.5647898, NULL, '291f0ae7-8a27-4097-bd82-3dc67bee6539');
INSERT INTO public.delivery VALUES (2, 'activity:2F36F4CB-5B1E-4702-8C08-BF2BB9618871', '2F36F4CB-5B1E-4702-8C08-BF2BB9618871', 'com.example.upgrade', 'phone-2', NULL, 'update', '{"aps":{"content-state":{"eta":7},"event":"update","timestamp":1795776565}}', false, 1795805365.6658792, 'pending', 0, 1795776565.6658792, NULL, 1795776565.6658792, NULL, '03ad1416-adcb-4cf2-a835-c73667e232e5');


--
-- Data for Name: deliverycredential; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.deliverycredential VALUES ('com.example.upgrade', 'development', 'TEAM123456', 'KEY7654321', '-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgL1ZpPFYzimwKnfcv
a0hPzEnjQz+2be4btVnrblY6BX2hRANCAASxz9PMG7KrxWHhGxFuht/Oc2DLAAsX
eQRm6gZba2zLdijmf+Lt/MpFyg20+2MXTIT9JgQ9pZy45x0dMZFJY/4L
-----END PRIVATE KEY-----
', 'https://127.0.0.1:9', NULL, 1795776565.5151682, NULL);


--
-- Data for Name: device; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.device VALUES ('default', 'Default', 1795776564.6677027);
INSERT INTO public.device VALUES ('phone-2', 'Second phone', 1795776565.1823635);


--
-- Data for Name: event; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.event VALUES (1, 1795776565.2124624, 'started', 'com.example.upgrade', 'default', 'C2EF1400-67D6-4EC1-B737-1BF4C6E3C51E', '{"activityState":"active","attributes":{"route":"active"},"attributesType":"Ride","autoEndAt":1795805365.2124624,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776565.2124624,"device":"default","id":"C2EF1400-67D6-4EC1-B737-1BF4C6E3C51E","startedAt":1795776565.2124624,"style":"standard"}');
INSERT INTO public.event VALUES (2, 1795776565.238258, 'contentUpdated', 'com.example.upgrade', 'default', 'C2EF1400-67D6-4EC1-B737-1BF4C6E3C51E', '{"content":{"relevanceScore":0,"state":{"eta":8}},"timestamp":1795776565.238258}');
INSERT INTO public.event VALUES (3, 1795776565.2591157, 'contentUpdated', 'com.example.upgrade', 'default', 'C2EF1400-67D6-4EC1-B737-1BF4C6E3C51E', '{"content":{"relevanceScore":0,"state":{"eta":6}},"timestamp":1795776565.2591157}');
INSERT INTO public.event VALUES (4, 1795776565.2591157, 'alert', 'com.example.upgrade', 'default', 'C2EF1400-67D6-4EC1-B737-1BF4C6E3C51E', '{"body":"6 minutes","title":"Closer"}');
INSERT INTO public.event VALUES (5, 1795776565.277485, 'started', 'com.example.upgrade', 'default', 'AED2987B-F521-4B06-9E22-B87970A8071C', '{"activityState":"active","attributes":{"route":"ended"},"attributesType":"Ride","autoEndAt":1795805365.277485,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776565.277485,"device":"default","id":"AED2987B-F521-4B06-9E22-B87970A8071C","startedAt":1795776565.277485,"style":"standard"}');
INSERT INTO public.event VALUES (6, 1795776565.3064067, 'contentUpdated', 'com.example.upgrade', 'default', 'AED2987B-F521-4B06-9E22-B87970A8071C', '{"content":{"relevanceScore":0,"state":{"eta":4}},"timestamp":1795776565.3064067}');
INSERT INTO public.event VALUES (7, 1795776565.3294482, 'contentUpdated', 'com.example.upgrade', 'default', 'AED2987B-F521-4B06-9E22-B87970A8071C', '{"content":{"relevanceScore":0,"state":{"eta":0}},"timestamp":1795776565.3294482}');
INSERT INTO public.event VALUES (8, 1795776565.3294482, 'stateChanged', 'com.example.upgrade', 'default', 'AED2987B-F521-4B06-9E22-B87970A8071C', '{"at":1795776565.3294482,"from":"active","reason":"endedByApp","to":"ended"}');
INSERT INTO public.event VALUES (9, 1795776565.3504992, 'started', 'com.example.upgrade', 'phone-2', '8D34EE1C-EFA0-48DF-92DB-E7D0A9C5EB1E', '{"activityState":"active","attributes":{"route":"dismissed"},"attributesType":"Ride","autoEndAt":1795805365.3504992,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776565.3504992,"device":"phone-2","id":"8D34EE1C-EFA0-48DF-92DB-E7D0A9C5EB1E","startedAt":1795776565.3504992,"style":"standard"}');
INSERT INTO public.event VALUES (10, 1795776565.376486, 'stateChanged', 'com.example.upgrade', 'phone-2', '8D34EE1C-EFA0-48DF-92DB-E7D0A9C5EB1E', '{"at":1795776565.376486,"from":"active","reason":"endedByApp","to":"ended"}');
INSERT INTO public.event VALUES (11, 1795776565.376486, 'stateChanged', 'com.example.upgrade', 'phone-2', '8D34EE1C-EFA0-48DF-92DB-E7D0A9C5EB1E', '{"at":1795776565.376486,"from":"ended","reason":"dismissalPolicy","to":"dismissed"}');
INSERT INTO public.event VALUES (12, 1795776565.3951583, 'started', 'com.example.upgrade', 'default', '660171B2-F6DB-41FF-A9B7-788A18462F22', '{"activityState":"active","attributes":{"route":"key"},"attributesType":"Ride","autoEndAt":1795805365.3951583,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":3}},"createdAt":1795776565.3951583,"device":"default","id":"660171B2-F6DB-41FF-A9B7-788A18462F22","key":"order-7","startedAt":1795776565.3951583,"style":"standard"}');
INSERT INTO public.event VALUES (13, 1795776565.4144273, 'contentUpdated', 'com.example.upgrade', 'default', '660171B2-F6DB-41FF-A9B7-788A18462F22', '{"content":{"relevanceScore":0,"state":{"eta":2}},"timestamp":1795776565.4144273}');
INSERT INTO public.event VALUES (14, 1795776565.434957, 'started', 'com.example.upgrade', 'default', 'BF8DE2A4-34C3-479B-8596-6125B9953352', '{"activityState":"active","attributes":{"route":"token"},"attributesType":"Ride","autoEndAt":1795805365.434957,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776565.434957,"device":"default","id":"BF8DE2A4-34C3-479B-8596-6125B9953352","pushToken":"b8e846dd692d1a98e5e38c77a297d22265792c21d968e4fe8516a475be693f21","pushType":"token","startedAt":1795776565.434957,"style":"standard"}');
INSERT INTO public.event VALUES (15, 1795776565.434957, 'pushTokenUpdated', 'com.example.upgrade', 'default', 'BF8DE2A4-34C3-479B-8596-6125B9953352', '{"kind":"activity","pushToken":"b8e846dd692d1a98e5e38c77a297d22265792c21d968e4fe8516a475be693f21"}');
INSERT INTO public.event VALUES (16, 1795776565.5647898, 'started', 'com.example.upgrade', 'phone-2', '2F36F4CB-5B1E-4702-8C08-BF2BB9618871', '{"activityState":"active","attributes":{"route":"delivered"},"attributesType":"Ride","autoEndAt":1795805365.5647898,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776565.5647898,"device":"phone-2","id":"2F36F4CB-5B1E-4702-8C08-BF2BB9618871","startedAt":1795776565.5647898,"style":"standard"}');
INSERT INTO public.event VALUES (17, 1795776565.5647898, 'delivery', 'com.example.upgrade', 'phone-2', '2F36F4CB-5B1E-4702-8C08-BF2BB9618871', '{"attempt":0,"delivery":1,"event":"start","note":"push-to-start to abababab…abababab (development); an alert supplied (\"Upgrade\"): a push-to-start needs one","outcome":"queued"}');
INSERT INTO public.event VALUES (18, 1795776565.6658792, 'contentUpdated', 'com.example.upgrade', 'phone-2', '2F36F4CB-5B1E-4702-8C08-BF2BB9618871', '{"content":{"relevanceScore":0,"state":{"eta":7}},"timestamp":1795776565.6658792}');
INSERT INTO public.event VALUES (19, 1795776565.6658792, 'delivery', 'com.example.upgrade', 'phone-2', '2F36F4CB-5B1E-4702-8C08-BF2BB9618871', '{"attempt":0,"delivery":2,"event":"update","outcome":"queued"}');


--
-- Data for Name: islet_migration; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.islet_migration VALUES (1, 'the tables of SQLite''s v10, events numbered at commit', '2026-11-27 10:49:24.159012+00');
INSERT INTO public.islet_migration VALUES (2, 'activities listed page by page in relevance order', '2026-11-27 10:49:24.411222+00');
INSERT INTO public.islet_migration VALUES (3, 'an app''s delivery paused', '2026-11-27 10:49:24.486699+00');
INSERT INTO public.islet_migration VALUES (4, 'room on activity pages for updates in place', '2026-11-27 10:49:24.506635+00');
INSERT INTO public.islet_migration VALUES (5, 'finished deliveries and an activity''s phone tokens found for the purge', '2026-11-27 10:49:24.526715+00');


--
-- Data for Name: layout; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: phoneactivity; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.phoneactivity VALUES ('2F36F4CB-5B1E-4702-8C08-BF2BB9618871', 'com.example.upgrade', 'phone-2', 'development', NULL, 'active', '');


--
-- Data for Name: phonetoken; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.phonetoken VALUES ('abababababababababababababababababababababababababababababababab', 'pushToStart', 'com.example.upgrade', 'phone-2', 'Ride', NULL, 'development', 1795776565.5432942, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.phonetoken VALUES ('cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd', 'update', 'com.example.upgrade', 'phone-2', NULL, '2F36F4CB-5B1E-4702-8C08-BF2BB9618871', 'development', 1795776565.6035485, NULL, NULL, NULL, NULL, NULL, NULL);


--
-- Data for Name: providerkey; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.providerkey VALUES ('KEY1234567', 'TEAM123456', 'com.example.upgrade', '-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEgmslcmM1DihQnLciCZnnf0/yVE6q
bppBzugt2SK3r/+Tkm4SQ0raePKAO3Mt99zEvCovwPxT9uLb3hJMAjUXzg==
-----END PUBLIC KEY-----
', 1795776565.4716387);


--
-- Data for Name: pushtoken; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.pushtoken VALUES ('d0926d178378d6ce4e99110ffd957aa4805913ad7c4af5818ad26a52bef4a633', 'pushToStart', NULL, 'default', 'com.example.upgrade', 1795776565.1413193, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('44e5bec39695b4033afc11a14a2759e367d74d889c01b0a109eee8e4c0f71b7b', 'pushToStart', NULL, 'phone-2', 'com.example.upgrade', 1795776565.182393, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('b8e846dd692d1a98e5e38c77a297d22265792c21d968e4fe8516a475be693f21', 'activity', 'BF8DE2A4-34C3-479B-8596-6125B9953352', 'default', 'com.example.upgrade', 1795776565.434957, NULL, NULL);


--
-- Data for Name: writeprobe; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Name: delivery_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.delivery_id_seq', 2, true);


--
-- Name: event_id; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.event_id', 19, true);


--
-- Name: activity activity_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.activity
    ADD CONSTRAINT activity_pkey PRIMARY KEY (id);


--
-- Name: activitytype activitytype_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.activitytype
    ADD CONSTRAINT activitytype_pkey PRIMARY KEY (bundleid, name);


--
-- Name: apikey apikey_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.apikey
    ADD CONSTRAINT apikey_pkey PRIMARY KEY (hash);


--
-- Name: app app_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.app
    ADD CONSTRAINT app_pkey PRIMARY KEY (bundleid);


--
-- Name: appsettings appsettings_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.appsettings
    ADD CONSTRAINT appsettings_pkey PRIMARY KEY (deviceid, bundleid);


--
-- Name: channel channel_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.channel
    ADD CONSTRAINT channel_pkey PRIMARY KEY (id);


--
-- Name: delivery delivery_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.delivery
    ADD CONSTRAINT delivery_pkey PRIMARY KEY (id);


--
-- Name: deliverycredential deliverycredential_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.deliverycredential
    ADD CONSTRAINT deliverycredential_pkey PRIMARY KEY (bundleid, environment);


--
-- Name: device device_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device
    ADD CONSTRAINT device_pkey PRIMARY KEY (id);


--
-- Name: event event_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.event
    ADD CONSTRAINT event_pkey PRIMARY KEY (id);


--
-- Name: islet_migration islet_migration_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.islet_migration
    ADD CONSTRAINT islet_migration_pkey PRIMARY KEY (version);


--
-- Name: layout layout_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.layout
    ADD CONSTRAINT layout_pkey PRIMARY KEY (bundleid, attributestype);


--
-- Name: phoneactivity phoneactivity_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.phoneactivity
    ADD CONSTRAINT phoneactivity_pkey PRIMARY KEY (activityid);


--
-- Name: phonetoken phonetoken_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.phonetoken
    ADD CONSTRAINT phonetoken_pkey PRIMARY KEY (token);


--
-- Name: providerkey providerkey_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.providerkey
    ADD CONSTRAINT providerkey_pkey PRIMARY KEY (keyid, bundleid);


--
-- Name: pushtoken pushtoken_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.pushtoken
    ADD CONSTRAINT pushtoken_pkey PRIMARY KEY (token);


--
-- Name: writeprobe writeprobe_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.writeprobe
    ADD CONSTRAINT writeprobe_pkey PRIMARY KEY (node);


--
-- Name: activity_app_listing; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX activity_app_listing ON public.activity USING btree (bundleid, listingscore, starttime, id COLLATE "C");


--
-- Name: activity_app_state; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX activity_app_state ON public.activity USING btree (bundleid, state);


--
-- Name: activity_channel; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX activity_channel ON public.activity USING btree (channelid) WHERE (channelid IS NOT NULL);


--
-- Name: activity_deadline; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX activity_deadline ON public.activity USING btree (deadline) WHERE (deadline IS NOT NULL);


--
-- Name: activity_device_app_state; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX activity_device_app_state ON public.activity USING btree (deviceid, bundleid, state);


--
-- Name: activity_key; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX activity_key ON public.activity USING btree (bundleid, key) WHERE (key IS NOT NULL);


--
-- Name: activity_listing; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX activity_listing ON public.activity USING btree (listingscore, starttime, id COLLATE "C");


--
-- Name: apikey_deviceid; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX apikey_deviceid ON public.apikey USING btree (deviceid);


--
-- Name: channel_app; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX channel_app ON public.channel USING btree (bundleid);


--
-- Name: delivery_due; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX delivery_due ON public.delivery USING btree (state, nextattemptat) WHERE (state = ANY (ARRAY['pending'::text, 'sending'::text]));


--
-- Name: delivery_finished; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX delivery_finished ON public.delivery USING btree (finishedat) WHERE (finishedat IS NOT NULL);


--
-- Name: delivery_unfinished; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX delivery_unfinished ON public.delivery USING btree (orderkey, id) WHERE (state = ANY (ARRAY['pending'::text, 'sending'::text, 'held'::text]));


--
-- Name: event_activity; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX event_activity ON public.event USING btree (activityid, id) WHERE (activityid IS NOT NULL);


--
-- Name: event_time; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX event_time ON public.event USING btree ("time");


--
-- Name: phonetoken_activity; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX phonetoken_activity ON public.phonetoken USING btree (activityid) WHERE (activityid IS NOT NULL);


--
-- Name: phonetoken_device; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX phonetoken_device ON public.phonetoken USING btree (deviceid);


--
-- Name: phonetoken_pushtostart; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX phonetoken_pushtostart ON public.phonetoken USING btree (deviceid, bundleid, attributestype) WHERE ((kind = 'pushToStart'::text) AND (retiredat IS NULL));


--
-- Name: phonetoken_update; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX phonetoken_update ON public.phonetoken USING btree (activityid) WHERE ((kind = 'update'::text) AND (retiredat IS NULL));


--
-- Name: pushtoken_current; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX pushtoken_current ON public.pushtoken USING btree (kind, deviceid, bundleid, activityid) WHERE (retiredat IS NULL);


--
-- Name: activity activity_bundleid_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.activity
    ADD CONSTRAINT activity_bundleid_fkey FOREIGN KEY (bundleid) REFERENCES public.app(bundleid);


--
-- Name: activity activity_deviceid_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.activity
    ADD CONSTRAINT activity_deviceid_fkey FOREIGN KEY (deviceid) REFERENCES public.device(id);


--
-- Name: activitytype activitytype_bundleid_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.activitytype
    ADD CONSTRAINT activitytype_bundleid_fkey FOREIGN KEY (bundleid) REFERENCES public.app(bundleid) ON DELETE CASCADE;


--
-- Name: apikey apikey_bundleid_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.apikey
    ADD CONSTRAINT apikey_bundleid_fkey FOREIGN KEY (bundleid) REFERENCES public.app(bundleid) ON DELETE CASCADE;


--
-- Name: apikey apikey_deviceid_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.apikey
    ADD CONSTRAINT apikey_deviceid_fkey FOREIGN KEY (deviceid) REFERENCES public.device(id) ON DELETE CASCADE;


--
-- Name: appsettings appsettings_bundleid_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.appsettings
    ADD CONSTRAINT appsettings_bundleid_fkey FOREIGN KEY (bundleid) REFERENCES public.app(bundleid) ON DELETE CASCADE;


--
-- Name: appsettings appsettings_deviceid_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.appsettings
    ADD CONSTRAINT appsettings_deviceid_fkey FOREIGN KEY (deviceid) REFERENCES public.device(id) ON DELETE CASCADE;


--
-- Name: channel channel_bundleid_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.channel
    ADD CONSTRAINT channel_bundleid_fkey FOREIGN KEY (bundleid) REFERENCES public.app(bundleid) ON DELETE CASCADE;


--
-- Name: deliverycredential deliverycredential_bundleid_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.deliverycredential
    ADD CONSTRAINT deliverycredential_bundleid_fkey FOREIGN KEY (bundleid) REFERENCES public.app(bundleid) ON DELETE CASCADE;


--
-- Name: layout layout_bundleid_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.layout
    ADD CONSTRAINT layout_bundleid_fkey FOREIGN KEY (bundleid) REFERENCES public.app(bundleid) ON DELETE CASCADE;


--
-- Name: providerkey providerkey_bundleid_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.providerkey
    ADD CONSTRAINT providerkey_bundleid_fkey FOREIGN KEY (bundleid) REFERENCES public.app(bundleid) ON DELETE CASCADE;


--
-- PostgreSQL database dump complete
--


