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
-- Name: androidnotification; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.androidnotification (
    activityid text NOT NULL,
    deviceid text NOT NULL,
    bundleid text NOT NULL,
    tag text NOT NULL,
    islet text NOT NULL,
    messagename text NOT NULL,
    receivedat double precision NOT NULL
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
    apnsid text NOT NULL,
    traceparent text
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
    createdat double precision NOT NULL,
    platform text DEFAULT 'ios'::text NOT NULL
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
-- Name: fcmaccesstoken; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.fcmaccesstoken (
    hash text NOT NULL,
    clientemail text NOT NULL,
    projectid text NOT NULL,
    expiresat double precision NOT NULL
);


--
-- Name: fcmcredential; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.fcmcredential (
    bundleid text NOT NULL,
    projectid text NOT NULL,
    clientemail text NOT NULL,
    privatekeyid text NOT NULL,
    tokenuri text NOT NULL,
    serviceaccount text NOT NULL,
    url text,
    cacertificate text,
    createdat double precision NOT NULL,
    failure text
);


--
-- Name: fcmserviceaccount; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.fcmserviceaccount (
    clientemail text NOT NULL,
    projectid text NOT NULL,
    privatekeyid text NOT NULL,
    publickey text NOT NULL,
    createdat double precision NOT NULL
);


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
    budgeted text NOT NULL,
    platform text DEFAULT 'ios'::text NOT NULL
);


--
-- Name: phonebudget; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.phonebudget (
    deviceid text NOT NULL,
    bundleid text NOT NULL,
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
-- Name: webhookattempt; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.webhookattempt (
    id bigint NOT NULL,
    endpointid text NOT NULL,
    event text NOT NULL,
    type text NOT NULL,
    attempt bigint NOT NULL,
    at double precision NOT NULL,
    status bigint,
    error text,
    latencyms double precision,
    response text,
    deadletter boolean NOT NULL
);


--
-- Name: webhookattempt_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.webhookattempt_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: webhookattempt_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.webhookattempt_id_seq OWNED BY public.webhookattempt.id;


--
-- Name: webhookendpoint; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.webhookendpoint (
    id text NOT NULL,
    bundleid text NOT NULL,
    url text NOT NULL,
    description text NOT NULL,
    events text NOT NULL,
    enabled boolean NOT NULL,
    disabledreason text,
    secret text NOT NULL,
    previoussecret text,
    previoussecretuntil double precision,
    cursor bigint NOT NULL,
    failingevent bigint,
    attempts bigint NOT NULL,
    failingsince double precision,
    nextattemptat double precision,
    leaseowner text,
    leaseuntil double precision,
    createdat double precision NOT NULL,
    updatedat double precision NOT NULL
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
-- Name: webhookattempt id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhookattempt ALTER COLUMN id SET DEFAULT nextval('public.webhookattempt_id_seq'::regclass);


--
-- Data for Name: activity; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.activity VALUES ('02EB6718-114C-4365-AA2E-114C8BE253AF', 'com.example.upgrade', 'default', 'Ride', 'active', NULL, 1795941811.3151786, 0, 1795913011.3151786, 1795913011.3151786, 1795913011.4025335, '{"activityState":"active","attributes":{"route":"active"},"attributesType":"Ride","autoEndAt":1795941811.3151786,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":6}},"createdAt":1795913011.3151786,"device":"default","id":"02EB6718-114C-4365-AA2E-114C8BE253AF","lastUpdateTimestamp":1795913011.4025335,"source":"api","startedAt":1795913011.3151786,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('8E7DB10D-D148-4197-AB4E-2678FA2B528C', 'com.example.upgrade', 'default', 'Ride', 'ended', NULL, 1795927411.4960203, 0, 1795913011.4253483, 1795913011.4253483, 1795913011.4960203, '{"activityState":"ended","attributes":{"route":"ended"},"attributesType":"Ride","autoEndAt":1795941811.4253483,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":0}},"createdAt":1795913011.4253483,"device":"default","dismissAt":1795927411.4960203,"endedAt":1795913011.4960203,"id":"8E7DB10D-D148-4197-AB4E-2678FA2B528C","lastUpdateTimestamp":1795913011.4960203,"source":"api","startedAt":1795913011.4253483,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('411B631C-9F1E-43AC-89A6-7711FC5ED3AE', 'com.example.upgrade', 'phone-2', 'Ride', 'dismissed', NULL, NULL, 0, 1795913011.5200894, 1795913011.5200894, 1795913011.5800083, '{"activityState":"dismissed","attributes":{"route":"dismissed"},"attributesType":"Ride","autoEndAt":1795941811.5200894,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795913011.5200894,"device":"phone-2","dismissAt":1795913011.5800083,"dismissedAt":1795913011.5800083,"endedAt":1795913011.5800083,"id":"411B631C-9F1E-43AC-89A6-7711FC5ED3AE","source":"api","startedAt":1795913011.5200894,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('6B7DC790-9581-403C-9F85-C2E7A0A70B7A', 'com.example.upgrade', 'default', 'Ride', 'active', 'order-7', 1795941811.5992036, 0, 1795913011.5992036, 1795913011.5992036, 1795913011.642885, '{"activityState":"active","attributes":{"route":"key"},"attributesType":"Ride","autoEndAt":1795941811.5992036,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":2}},"createdAt":1795913011.5992036,"device":"default","id":"6B7DC790-9581-403C-9F85-C2E7A0A70B7A","key":"order-7","lastUpdateTimestamp":1795913011.642885,"source":"api","startedAt":1795913011.5992036,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('E8B77E24-10BE-4DC9-9D89-EAE355F92748', 'com.example.upgrade', 'default', 'Ride', 'active', NULL, 1795941811.6837206, 0, 1795913011.6837206, 1795913011.6837206, 1795913011.6837206, '{"activityState":"active","attributes":{"route":"token"},"attributesType":"Ride","autoEndAt":1795941811.6837206,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795913011.6837206,"device":"default","id":"E8B77E24-10BE-4DC9-9D89-EAE355F92748","pushToken":"7e557fd82d6623c83ecf779e0f3464ff71559c141dba7d2dd424154e466a5e3e","pushType":"token","source":"api","startedAt":1795913011.6837206,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('EEA0C674-F3EC-4186-BF61-9D52EF23FC83', 'com.example.upgrade', 'phone-2', 'Ride', 'active', NULL, 1795941811.8910265, 0, 1795913011.8910265, 1795913011.8910265, 1795913012.0139327, '{"activityState":"active","attributes":{"route":"delivered"},"attributesType":"Ride","autoEndAt":1795941811.8910265,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":7}},"createdAt":1795913011.8910265,"device":"phone-2","id":"EEA0C674-F3EC-4186-BF61-9D52EF23FC83","lastUpdateTimestamp":1795913012.0139327,"source":"api","startedAt":1795913011.8910265,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('5E1B241D-26A5-4827-9D72-46CAFCCBBA3E', 'com.example.upgrade', 'android-1', 'Ride', 'active', NULL, 1795941812.3945928, 0, 1795913012.3945928, 1795913012.3945928, 1795913012.6586971, '{"activityState":"active","attributes":{"route":"android"},"attributesType":"Ride","autoEndAt":1795941812.3945928,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":5}},"createdAt":1795913012.3945928,"device":"android-1","id":"5E1B241D-26A5-4827-9D72-46CAFCCBBA3E","lastUpdateTimestamp":1795913012.6586971,"source":"api","startedAt":1795913012.3945928,"style":"standard"}', NULL, DEFAULT);


--
-- Data for Name: activitytype; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: androidnotification; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: apikey; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.apikey VALUES ('03f76ae39091f42cefd8d7aec6f9628779b292033dc93ba3aafe5c1c5a4cf357', NULL, NULL, 1795913010.5731392);
INSERT INTO public.apikey VALUES ('73312be1bf7ff4525fb6079b9c238d38d7f313dda48fe432526ab57df4893a83', 'com.example.upgrade', NULL, 1795913011.2117405);


--
-- Data for Name: app; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.app VALUES ('com.example.upgrade', 'Upgrade', 1795913011.2111583, false, false);


--
-- Data for Name: appsettings; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: channel; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.channel VALUES ('MrKryrtaMp0ksSXLZMq5HA==', 'com.example.upgrade', 1, 1795913011.7955337, NULL, NULL, NULL, NULL);


--
-- Data for Name: delivery; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.delivery VALUES (2, 'activity:EEA0C674-F3EC-4186-BF61-9D52EF23FC83', 'EEA0C674-F3EC-4186-BF61-9D52EF23FC83', 'com.example.upgrade', 'phone-2', NULL, 'update', '{"aps":{"content-state":{"eta":7},"event":"update","timestamp":1795913012}}', false, 1795941812.0139327, 'pending', 0, 1795913012.0139327, NULL, 1795913012.0139327, NULL, 'a40bb120-17b5-4381-821b-1b14d2e40107', NULL);
INSERT INTO public.delivery VALUES (3, 'activity:5E1B241D-26A5-4827-9D72-46CAFCCBBA3E', '5E1B241D-26A5-4827-9D72-46CAFCCBBA3E', 'com.example.upgrade', 'android-1', NULL, 'start', '{"activityId":"5E1B241D-26A5-4827-9D72-46CAFCCBBA3E","attributes":{"route":"android"},"attributesType":"Ride","bundleId":"com.example.upgrade","contentState":{"eta":10},"event":"start","notification":{"text":"Eta 10","title":"Ride"},"timestamp":1795913012}', true, 1795941812.3945928, 'sending', 1, 1795913012.3945928, 1795913072.6209188, 1795913012.3945928, NULL, '3574b3c1-7e5e-4b10-b5e1-ccc69048fc2e', NULL);
INSERT INTO public.delivery VALUES (5, 'activity:5E1B241D-26A5-4827-9D72-46CAFCCBBA3E', '5E1B241D-26A5-4827-9D72-46CAFCCBBA3E', 'com.example.upgrade', 'android-1', NULL, 'update', '{"activityId":"5E1B241D-26A5-4827-9D72-46CAFCCBBA3E","attributes":{"route":"android"},"attributesType":"Ride","bundleId":"com.example.upgrade","contentState":{"eta":5},"event":"update","notification":{"text":"Eta 5","title":"Ride"},"timestamp":1795913012}', false, 1795941812.6586971, 'pending', 0, 1795913012.6586971, NULL, 1795913012.6586971, NULL, '81f0e1f6-c1ee-4607-9299-666194eba94a', NULL);
INSERT INTO public.delivery VALUES (1, 'activity:EEA0C674-F3EC-4186-BF61-9D52EF23FC83', 'EEA0C674-F3EC-4186-BF61-9D52EF23FC83', 'com.example.upgrade', 'phone-2', NULL, 'start', '{"aps":{"alert":{"body":"","title":"Upgrade"},"attributes":{"islet":"EEA0C674-F3EC-4186-BF61-9D52EF23FC83","route":"delivered"},"attributes-type":"Ride","content-state":{"eta":10},"event":"start","input-push-token":1,"timestamp":1795913011}}', true, 1795941811.8910265, 'pending', 3, 1795913017.7390196, NULL, 1795913011.8910265, NULL, '8cb6325b-f3d6-4bab-bc0b-2a42a25cca50', NULL);


--
-- Data for Name: deliverycredential; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.deliverycredential VALUES ('com.example.upgrade', 'development', 'TEAM123456', 'KEY7654321', '-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgJuyPkilP0hzoTBhO
+1WfI0RFX1EgePNeuwAXVuL42k+hRANCAARxn4OLqpnkWAeByVfdSE1ADapaL8Jg
ZS2jTYxxsxTqid53ZGNq6dmLaND/5iDfrWYEDGaRfoHPrEHwdc2eCA03
-----END PRIVATE KEY-----
', 'https://127.0.0.1:9', NULL, 1795913011.8164935, NULL);


--
-- Data for Name: device; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.device VALUES ('default', 'Default', 1795913010.4950576, 'ios');
INSERT INTO public.device VALUES ('phone-2', 'Second phone', 1795913011.2873993, 'ios');
INSERT INTO public.device VALUES ('android-1', 'Pixel', 1795913012.2747722, 'android');


--
-- Data for Name: event; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.event VALUES (1, 1795913011.3151786, 'started', 'com.example.upgrade', 'default', '02EB6718-114C-4365-AA2E-114C8BE253AF', '{"activityState":"active","attributes":{"route":"active"},"attributesType":"Ride","autoEndAt":1795941811.3151786,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795913011.3151786,"device":"default","id":"02EB6718-114C-4365-AA2E-114C8BE253AF","source":"api","startedAt":1795913011.3151786,"style":"standard"}');
INSERT INTO public.event VALUES (2, 1795913011.383563, 'contentUpdated', 'com.example.upgrade', 'default', '02EB6718-114C-4365-AA2E-114C8BE253AF', '{"content":{"relevanceScore":0,"state":{"eta":8}},"timestamp":1795913011.383563}');
INSERT INTO public.event VALUES (3, 1795913011.4025335, 'contentUpdated', 'com.example.upgrade', 'default', '02EB6718-114C-4365-AA2E-114C8BE253AF', '{"content":{"relevanceScore":0,"state":{"eta":6}},"timestamp":1795913011.4025335}');
INSERT INTO public.event VALUES (4, 1795913011.4025335, 'alert', 'com.example.upgrade', 'default', '02EB6718-114C-4365-AA2E-114C8BE253AF', '{"body":"6 minutes","title":"Closer"}');
INSERT INTO public.event VALUES (5, 1795913011.4253483, 'started', 'com.example.upgrade', 'default', '8E7DB10D-D148-4197-AB4E-2678FA2B528C', '{"activityState":"active","attributes":{"route":"ended"},"attributesType":"Ride","autoEndAt":1795941811.4253483,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795913011.4253483,"device":"default","id":"8E7DB10D-D148-4197-AB4E-2678FA2B528C","source":"api","startedAt":1795913011.4253483,"style":"standard"}');
INSERT INTO public.event VALUES (6, 1795913011.471192, 'contentUpdated', 'com.example.upgrade', 'default', '8E7DB10D-D148-4197-AB4E-2678FA2B528C', '{"content":{"relevanceScore":0,"state":{"eta":4}},"timestamp":1795913011.471192}');
INSERT INTO public.event VALUES (7, 1795913011.4960203, 'contentUpdated', 'com.example.upgrade', 'default', '8E7DB10D-D148-4197-AB4E-2678FA2B528C', '{"content":{"relevanceScore":0,"state":{"eta":0}},"timestamp":1795913011.4960203}');
INSERT INTO public.event VALUES (8, 1795913011.4960203, 'stateChanged', 'com.example.upgrade', 'default', '8E7DB10D-D148-4197-AB4E-2678FA2B528C', '{"at":1795913011.4960203,"from":"active","reason":"endedByApp","to":"ended"}');
INSERT INTO public.event VALUES (9, 1795913011.5200894, 'started', 'com.example.upgrade', 'phone-2', '411B631C-9F1E-43AC-89A6-7711FC5ED3AE', '{"activityState":"active","attributes":{"route":"dismissed"},"attributesType":"Ride","autoEndAt":1795941811.5200894,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795913011.5200894,"device":"phone-2","id":"411B631C-9F1E-43AC-89A6-7711FC5ED3AE","source":"api","startedAt":1795913011.5200894,"style":"standard"}');
INSERT INTO public.event VALUES (10, 1795913011.5800083, 'stateChanged', 'com.example.upgrade', 'phone-2', '411B631C-9F1E-43AC-89A6-7711FC5ED3AE', '{"at":1795913011.5800083,"from":"active","reason":"endedByApp","to":"ended"}');
INSERT INTO public.event VALUES (11, 1795913011.5800083, 'stateChanged', 'com.example.upgrade', 'phone-2', '411B631C-9F1E-43AC-89A6-7711FC5ED3AE', '{"at":1795913011.5800083,"from":"ended","reason":"dismissalPolicy","to":"dismissed"}');
INSERT INTO public.event VALUES (12, 1795913011.5992036, 'started', 'com.example.upgrade', 'default', '6B7DC790-9581-403C-9F85-C2E7A0A70B7A', '{"activityState":"active","attributes":{"route":"key"},"attributesType":"Ride","autoEndAt":1795941811.5992036,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":3}},"createdAt":1795913011.5992036,"device":"default","id":"6B7DC790-9581-403C-9F85-C2E7A0A70B7A","key":"order-7","source":"api","startedAt":1795913011.5992036,"style":"standard"}');
INSERT INTO public.event VALUES (13, 1795913011.642885, 'contentUpdated', 'com.example.upgrade', 'default', '6B7DC790-9581-403C-9F85-C2E7A0A70B7A', '{"content":{"relevanceScore":0,"state":{"eta":2}},"timestamp":1795913011.642885}');
INSERT INTO public.event VALUES (14, 1795913011.6837206, 'started', 'com.example.upgrade', 'default', 'E8B77E24-10BE-4DC9-9D89-EAE355F92748', '{"activityState":"active","attributes":{"route":"token"},"attributesType":"Ride","autoEndAt":1795941811.6837206,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795913011.6837206,"device":"default","id":"E8B77E24-10BE-4DC9-9D89-EAE355F92748","pushToken":"7e557fd82d6623c83ecf779e0f3464ff71559c141dba7d2dd424154e466a5e3e","pushType":"token","source":"api","startedAt":1795913011.6837206,"style":"standard"}');
INSERT INTO public.event VALUES (15, 1795913011.6837206, 'pushTokenUpdated', 'com.example.upgrade', 'default', 'E8B77E24-10BE-4DC9-9D89-EAE355F92748', '{"kind":"activity","pushToken":"7e557fd82d6623c83ecf779e0f3464ff71559c141dba7d2dd424154e466a5e3e"}');
INSERT INTO public.event VALUES (16, 1795913011.8511453, 'pushTokenUpdated', 'com.example.upgrade', 'phone-2', NULL, '{"attributesType":"Ride","kind":"phonePushToStart","pushToken":"abababababababababababababababababababababababababababababababab"}');
INSERT INTO public.event VALUES (17, 1795913011.8910265, 'started', 'com.example.upgrade', 'phone-2', 'EEA0C674-F3EC-4186-BF61-9D52EF23FC83', '{"activityState":"active","attributes":{"route":"delivered"},"attributesType":"Ride","autoEndAt":1795941811.8910265,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795913011.8910265,"device":"phone-2","id":"EEA0C674-F3EC-4186-BF61-9D52EF23FC83","source":"api","startedAt":1795913011.8910265,"style":"standard"}');
INSERT INTO public.event VALUES (18, 1795913011.8910265, 'delivery', 'com.example.upgrade', 'phone-2', 'EEA0C674-F3EC-4186-BF61-9D52EF23FC83', '{"attempt":0,"delivery":1,"event":"start","note":"push-to-start to abababab…abababab (development); an alert supplied (\"Upgrade\"): a push-to-start needs one","outcome":"queued"}');
INSERT INTO public.event VALUES (19, 1795913011.9396782, 'pushTokenUpdated', 'com.example.upgrade', 'phone-2', 'EEA0C674-F3EC-4186-BF61-9D52EF23FC83', '{"kind":"phoneUpdate","pushToken":"cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd"}');
INSERT INTO public.event VALUES (20, 1795913012.0139327, 'contentUpdated', 'com.example.upgrade', 'phone-2', 'EEA0C674-F3EC-4186-BF61-9D52EF23FC83', '{"content":{"relevanceScore":0,"state":{"eta":7}},"timestamp":1795913012.0139327}');
INSERT INTO public.event VALUES (21, 1795913012.0139327, 'delivery', 'com.example.upgrade', 'phone-2', 'EEA0C674-F3EC-4186-BF61-9D52EF23FC83', '{"attempt":0,"delivery":2,"event":"update","outcome":"queued"}');
INSERT INTO public.event VALUES (22, 1795913012.0768, 'delivery', 'com.example.upgrade', 'phone-2', 'EEA0C674-F3EC-4186-BF61-9D52EF23FC83', '{"apnsId":"8cb6325b-f3d6-4bab-bc0b-2a42a25cca50","attempt":1,"delivery":1,"environment":"development","event":"start","latencyMs":81.393724,"nextAttemptAt":1795913012.7181096,"note":"no connection: Connection errors: SingleConnectionFailure(target: [IPv4]127.0.0.1/127.0.0.1:9, error: connection reset (error set): Connection refused) (errno: 111))","outcome":"retrying","priority":10,"priorityReason":"a start (push-to-start has its own budget on the phone)","target":"abababab…abababab"}');
INSERT INTO public.event VALUES (23, 1795913012.3323927, 'pushTokenUpdated', 'com.example.upgrade', 'android-1', NULL, '{"kind":"fcm","pushToken":"fcm-eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"}');
INSERT INTO public.event VALUES (24, 1795913012.3945928, 'started', 'com.example.upgrade', 'android-1', '5E1B241D-26A5-4827-9D72-46CAFCCBBA3E', '{"activityState":"active","attributes":{"route":"android"},"attributesType":"Ride","autoEndAt":1795941812.3945928,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795913012.3945928,"device":"android-1","id":"5E1B241D-26A5-4827-9D72-46CAFCCBBA3E","source":"api","startedAt":1795913012.3945928,"style":"standard"}');
INSERT INTO public.event VALUES (25, 1795913012.3945928, 'delivery', 'com.example.upgrade', 'android-1', '5E1B241D-26A5-4827-9D72-46CAFCCBBA3E', '{"attempt":0,"delivery":3,"event":"start","note":"to Android phone fcm-eeee…eeeeeeee through FCM","outcome":"queued"}');
INSERT INTO public.event VALUES (26, 1795913012.6586971, 'contentUpdated', 'com.example.upgrade', 'android-1', '5E1B241D-26A5-4827-9D72-46CAFCCBBA3E', '{"content":{"relevanceScore":0,"state":{"eta":5}},"timestamp":1795913012.6586971}');
INSERT INTO public.event VALUES (27, 1795913012.6586971, 'delivery', 'com.example.upgrade', 'android-1', '5E1B241D-26A5-4827-9D72-46CAFCCBBA3E', '{"attempt":0,"delivery":5,"event":"update","outcome":"queued"}');
INSERT INTO public.event VALUES (28, 1795913012.8580134, 'delivery', 'com.example.upgrade', 'phone-2', 'EEA0C674-F3EC-4186-BF61-9D52EF23FC83', '{"apnsId":"8cb6325b-f3d6-4bab-bc0b-2a42a25cca50","attempt":2,"delivery":1,"environment":"development","event":"start","latencyMs":4.745134,"nextAttemptAt":1795913014.007787,"note":"no connection: Connection errors: SingleConnectionFailure(target: [IPv4]127.0.0.1/127.0.0.1:9, error: connection reset (error set): Connection refused) (errno: 111))","outcome":"retrying","priority":10,"priorityReason":"a start (push-to-start has its own budget on the phone)","target":"abababab…abababab"}');
INSERT INTO public.event VALUES (29, 1795913014.0601406, 'delivery', 'com.example.upgrade', 'phone-2', 'EEA0C674-F3EC-4186-BF61-9D52EF23FC83', '{"apnsId":"8cb6325b-f3d6-4bab-bc0b-2a42a25cca50","attempt":3,"delivery":1,"environment":"development","event":"start","latencyMs":4.931522,"nextAttemptAt":1795913017.7390196,"note":"no connection: Connection errors: SingleConnectionFailure(target: [IPv4]127.0.0.1/127.0.0.1:9, error: connection reset (error set): Connection refused) (errno: 111))","outcome":"retrying","priority":10,"priorityReason":"a start (push-to-start has its own budget on the phone)","target":"abababab…abababab"}');


--
-- Data for Name: fcmaccesstoken; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: fcmcredential; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.fcmcredential VALUES ('com.example.upgrade', 'islet-upgrade', 'firebase-adminsdk-55es9@islet-upgrade.iam.gserviceaccount.com', '7d46aa43631ab419ff93b9951e1282126e706149', 'https://127.0.0.1:46209/token', '{"auth_provider_x509_cert_url":"https://www.googleapis.com/oauth2/v1/certs","auth_uri":"https://accounts.google.com/o/oauth2/auth","client_email":"firebase-adminsdk-55es9@islet-upgrade.iam.gserviceaccount.com","client_id":"104314586685219524714","client_x509_cert_url":"https://www.googleapis.com/robot/v1/metadata/x509/firebase%2Dadminsdk%2D55es9%40islet%2Dupgrade%2Eiam%2Egserviceaccount%2Ecom","private_key":"-----BEGIN PRIVATE KEY-----\nMIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQCiv0JqgIo31JLC\nOU3dXfUi5yjGfnHCoR6Creen8yPTrs3jGNcM6aFt5aM0f1tYUJzGx8oosUkrIemS\nNSZVmrbQNUk5BrJbep0a63R6zjL6gj9OI7llCUJXQqlqkhfOam2xV8f8B36PkLTY\ne7q2xWlo7pUYMTlc1V8Th2Llt/eWCbXQxkq9m+dw4w0vLcO0DZ02YnU1/rdeVAxD\n+bs2BYQgs/GwnYw7+SqIGU76r1CgmkngdcdQHgWT7TRllifjlPxEXdmhgBfKSEtL\nrPafy4k2vgb69a7ld/N+obL1PGy4S3ekzOoOso+bnupLgWvzhdQaqkAdEfTx3gAK\nFu5ux17HAgMBAAECggEAQeNFu8Frc9vzSH+TpwXleypzxxyk6MN7CzPlwAh/HjG8\nd+70DW2+pbPdBaFz9Ua5mf6DuULBGR3DJqau7ORUk+mmydgMuF1lImNlxlwZpnK5\nt2ReJ+n+Oj6qQROBYNeUrkIYHFBabDwNA0HgXyOAH/PLV76B9zQJKGpc3xzCNzLz\n32ELn5LOJnp6xqz10N8W7QJriyz/h6KC7WKtEEn1USva4Qt70r+6wAxJOzgh7i1w\nDH5OLL6hrhQUtlOYvgWyXEqa9bb89+AtWWAbRUIRSmoFQWvJU3Jc82rm6glDvOtL\nWA3rHDk7JtavLjD4Mpk7PQZu3TIOnIVMuKIf/wxUBQKBgQDkaRr8VOIseDW229DP\ntIC9CZ2D1bORpdvaZH2CKGXliEb517FBGIdF/0NjOvMHuJDj4YNGxYjOPueCNiKM\nVlkRdM0x5MKip4ZaGsqbrz170hQrx8WcHYVKtbV7Bf1F7iKpnKRiW19//goKxGBI\n4crIQXLExZFEys7gRTJYTVtoVQKBgQC2Z7afvsMj7isoFpvXqELFoXrGJRltKXVZ\nD8GDriLwo/uiyCyqQGZQgP2y+1EKLtu5kAYxc6U0WoAG8aKdWtXhU462pCRAWs80\n7FigLJIFsGRU/7jYCxSkeVy8kt1u6SjsQeSGipIOu2blzPRatjXG/7P/UXQtAQVC\nzbpGvZv2qwKBgBlR8XThcAUf+kxgB8DOsKrEAxsXOIW/ziRimWsxUUJlngCaQYMG\n1hATYQQCB+jmM+GfIS9aPHUokf9kQuYtuEfwG8MZKd5gFcutRqKFhZpRSn0j8ysA\nNsN2azzNCCuVX3BP9gUVPfvxTGmvJUFPDmyunKtlf1oR5WcFJLSXNrfVAoGAM8YY\ndhtFdGtj4IsaTQo7ebEuEhPxtaRw5IiuWtwQmtFQ2ZGL6/8/i1YxrJ3dENDgGTmi\nKGM03zlY4Z+wko136+81sO3CRGoCKnlzZnOANxEsSVwUcW4ju9Oe2P+uzo5ryTOi\n0/V9I6VZvZyBN0ZE2Wk3BB9wpF2HysBuQSoMnOUCgYAhs8feHSjKkLjTE0g/9+n/\nrUzpQUQUfaZSlfsjNmqdjBF4Jj+v9+VHPKKguXlouQB+YCqtazgWuNmBzkk1ZCtp\nA78VytOLTlkCwecHduWdxeOTwFu2whCKtxHR2PfcLtKmojtjaZbyd0Co6OR6iyMg\nXKaovYHJn889n8b6D4XnDQ==\n-----END PRIVATE KEY-----\n\n","private_key_id":"7d46aa43631ab419ff93b9951e1282126e706149","project_id":"islet-upgrade","token_uri":"https://127.0.0.1:46209/token","type":"service_account","universe_domain":"googleapis.com"}', 'https://127.0.0.1:9', NULL, 1795913012.2468557, NULL);


--
-- Data for Name: fcmserviceaccount; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.fcmserviceaccount VALUES ('firebase-adminsdk-55es9@islet-upgrade.iam.gserviceaccount.com', 'islet-upgrade', '7d46aa43631ab419ff93b9951e1282126e706149', '-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAor9CaoCKN9SSwjlN3V31
Iucoxn5xwqEegq3np/Mj067N4xjXDOmhbeWjNH9bWFCcxsfKKLFJKyHpkjUmVZq2
0DVJOQayW3qdGut0es4y+oI/TiO5ZQlCV0KpapIXzmptsVfH/Ad+j5C02Hu6tsVp
aO6VGDE5XNVfE4di5bf3lgm10MZKvZvncOMNLy3DtA2dNmJ1Nf63XlQMQ/m7NgWE
ILPxsJ2MO/kqiBlO+q9QoJpJ4HXHUB4Fk+00ZZYn45T8RF3ZoYAXykhLS6z2n8uJ
Nr4G+vWu5XfzfqGy9TxsuEt3pMzqDrKPm57qS4Fr84XUGqpAHRH08d4AChbubsde
xwIDAQAB
-----END PUBLIC KEY-----', 1795913012.2231655);


--
-- Data for Name: islet_migration; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.islet_migration VALUES (1, 'the tables of SQLite''s v10, events numbered at commit', '2026-11-29 00:43:29.692228+00');
INSERT INTO public.islet_migration VALUES (2, 'activities listed page by page in relevance order', '2026-11-29 00:43:29.942617+00');
INSERT INTO public.islet_migration VALUES (3, 'an app''s delivery paused', '2026-11-29 00:43:30.022954+00');
INSERT INTO public.islet_migration VALUES (4, 'room on activity pages for updates in place', '2026-11-29 00:43:30.040394+00');
INSERT INTO public.islet_migration VALUES (5, 'finished deliveries and an activity''s phone tokens found for the purge', '2026-11-29 00:43:30.052686+00');
INSERT INTO public.islet_migration VALUES (6, 'Android phones, FCM credentials, and Islet playing Google', '2026-11-29 00:43:30.07456+00');
INSERT INTO public.islet_migration VALUES (7, 'the push budget is each app''s on each phone', '2026-11-29 00:43:30.119421+00');
INSERT INTO public.islet_migration VALUES (8, 'a delivery keeps the trace of the change that wrote it', '2026-11-29 00:43:30.146929+00');
INSERT INTO public.islet_migration VALUES (9, 'webhook endpoints and their attempts', '2026-11-29 00:43:30.162649+00');


--
-- Data for Name: layout; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: phoneactivity; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.phoneactivity VALUES ('EEA0C674-F3EC-4186-BF61-9D52EF23FC83', 'com.example.upgrade', 'phone-2', 'development', NULL, 'active', '', 'ios');
INSERT INTO public.phoneactivity VALUES ('5E1B241D-26A5-4827-9D72-46CAFCCBBA3E', 'com.example.upgrade', 'android-1', 'production', NULL, 'active', '', 'android');


--
-- Data for Name: phonebudget; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: phonetoken; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.phonetoken VALUES ('abababababababababababababababababababababababababababababababab', 'pushToStart', 'com.example.upgrade', 'phone-2', 'Ride', NULL, 'development', 1795913011.8511453, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.phonetoken VALUES ('cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd', 'update', 'com.example.upgrade', 'phone-2', NULL, 'EEA0C674-F3EC-4186-BF61-9D52EF23FC83', 'development', 1795913011.9396782, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.phonetoken VALUES ('fcm-eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee', 'fcm', 'com.example.upgrade', 'android-1', NULL, NULL, 'production', 1795913012.3323927, NULL, NULL, NULL, NULL, NULL, NULL);


--
-- Data for Name: providerkey; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.providerkey VALUES ('KEY1234567', 'TEAM123456', 'com.example.upgrade', '-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEF3CjcLYfaJnbf12i0sdxx6a8rQaC
cIqrVqErf+TznISmAgpiWktpXbO3B2wtTacsGcR8GcM4JQZlXKfipW+VCA==
-----END PUBLIC KEY-----
', 1795913011.7282686);


--
-- Data for Name: pushtoken; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.pushtoken VALUES ('3179bf568ff04b6975a527cc1529f7dac14196d6f0fb6eefea0e554253fafd4c', 'pushToStart', NULL, 'default', 'com.example.upgrade', 1795913011.2117405, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('74d010c54669cb55e0bd8fd0c32a1f95613726d9c40926104bd7938c9c9a46b6', 'pushToStart', NULL, 'phone-2', 'com.example.upgrade', 1795913011.287441, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('7e557fd82d6623c83ecf779e0f3464ff71559c141dba7d2dd424154e466a5e3e', 'activity', 'E8B77E24-10BE-4DC9-9D89-EAE355F92748', 'default', 'com.example.upgrade', 1795913011.6837206, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('vog4hdJpQgQaWdYDi6TU9A:APA91b4lLSiOvXwbbvBpqR7jsFiR9IJH8SU7sXR-hKjr6mw_mnhkCKOvnjOc0lGkavdx8zZq89M1wz8_aOLvH-Vsq_z4St1yaXiwAWGU3zMWJ4TPxn70T0r4Wwq5FH2VLkMf9mVm1QZA', 'fcm', NULL, 'android-1', 'com.example.upgrade', 1795913012.2747998, NULL, NULL);


--
-- Data for Name: webhookattempt; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: webhookendpoint; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: writeprobe; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Name: delivery_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.delivery_id_seq', 5, true);


--
-- Name: event_id; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.event_id', 29, true);


--
-- Name: webhookattempt_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.webhookattempt_id_seq', 1, false);


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
-- Name: androidnotification androidnotification_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.androidnotification
    ADD CONSTRAINT androidnotification_pkey PRIMARY KEY (activityid);


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
-- Name: fcmaccesstoken fcmaccesstoken_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.fcmaccesstoken
    ADD CONSTRAINT fcmaccesstoken_pkey PRIMARY KEY (hash);


--
-- Name: fcmcredential fcmcredential_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.fcmcredential
    ADD CONSTRAINT fcmcredential_pkey PRIMARY KEY (bundleid);


--
-- Name: fcmserviceaccount fcmserviceaccount_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.fcmserviceaccount
    ADD CONSTRAINT fcmserviceaccount_pkey PRIMARY KEY (clientemail);


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
-- Name: phonebudget phonebudget_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.phonebudget
    ADD CONSTRAINT phonebudget_pkey PRIMARY KEY (deviceid, bundleid);


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
-- Name: webhookattempt webhookattempt_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhookattempt
    ADD CONSTRAINT webhookattempt_pkey PRIMARY KEY (id);


--
-- Name: webhookendpoint webhookendpoint_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhookendpoint
    ADD CONSTRAINT webhookendpoint_pkey PRIMARY KEY (id);


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
-- Name: androidnotification_tag; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX androidnotification_tag ON public.androidnotification USING btree (deviceid, bundleid, tag);


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
-- Name: phonetoken_fcm; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX phonetoken_fcm ON public.phonetoken USING btree (deviceid, bundleid) WHERE ((kind = 'fcm'::text) AND (retiredat IS NULL));


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
-- Name: webhookattempt_endpoint; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX webhookattempt_endpoint ON public.webhookattempt USING btree (endpointid, id);


--
-- Name: webhookendpoint_bundleid; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX webhookendpoint_bundleid ON public.webhookendpoint USING btree (bundleid, createdat);


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
-- Name: fcmcredential fcmcredential_bundleid_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.fcmcredential
    ADD CONSTRAINT fcmcredential_bundleid_fkey FOREIGN KEY (bundleid) REFERENCES public.app(bundleid) ON DELETE CASCADE;


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


