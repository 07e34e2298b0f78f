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
);


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
    strictpushes boolean DEFAULT false NOT NULL
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

INSERT INTO public.activity VALUES ('10BD5C14-077F-4C51-B39F-B79A7132DFC8', 'com.example.upgrade', 'default', 'Ride', 'active', NULL, 1795805080.9486434, 0, 1795776280.9486434, 1795776280.9486434, 1795776281.0165296, '{"activityState":"active","attributes":{"route":"active"},"attributesType":"Ride","autoEndAt":1795805080.9486434,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":6}},"createdAt":1795776280.9486434,"device":"default","id":"10BD5C14-077F-4C51-B39F-B79A7132DFC8","lastUpdateTimestamp":1795776281.0165296,"startedAt":1795776280.9486434,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('532CD0A9-5031-4816-9B8B-6EBA5CC823F0', 'com.example.upgrade', 'default', 'Ride', 'ended', NULL, 1795790681.1116056, 0, 1795776281.039424, 1795776281.039424, 1795776281.1116056, '{"activityState":"ended","attributes":{"route":"ended"},"attributesType":"Ride","autoEndAt":1795805081.039424,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":0}},"createdAt":1795776281.039424,"device":"default","dismissAt":1795790681.1116056,"endedAt":1795776281.1116056,"id":"532CD0A9-5031-4816-9B8B-6EBA5CC823F0","lastUpdateTimestamp":1795776281.1116056,"startedAt":1795776281.039424,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('49AB85BF-43CA-4E42-83FA-51D1052BA20D', 'com.example.upgrade', 'phone-2', 'Ride', 'dismissed', NULL, NULL, 0, 1795776281.1531096, 1795776281.1531096, 1795776281.1873298, '{"activityState":"dismissed","attributes":{"route":"dismissed"},"attributesType":"Ride","autoEndAt":1795805081.1531096,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776281.1531096,"device":"phone-2","dismissAt":1795776281.1873298,"dismissedAt":1795776281.1873298,"endedAt":1795776281.1873298,"id":"49AB85BF-43CA-4E42-83FA-51D1052BA20D","startedAt":1795776281.1531096,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('BE1EED71-A8BD-4A0D-AC07-B94390F3DFA0', 'com.example.upgrade', 'default', 'Ride', 'active', 'order-7', 1795805081.2286937, 0, 1795776281.2286937, 1795776281.2286937, 1795776281.2761717, '{"activityState":"active","attributes":{"route":"key"},"attributesType":"Ride","autoEndAt":1795805081.2286937,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":2}},"createdAt":1795776281.2286937,"device":"default","id":"BE1EED71-A8BD-4A0D-AC07-B94390F3DFA0","key":"order-7","lastUpdateTimestamp":1795776281.2761717,"startedAt":1795776281.2286937,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('C1CE1964-690F-4659-9624-B8C1FB4628D7', 'com.example.upgrade', 'default', 'Ride', 'active', NULL, 1795805081.3159156, 0, 1795776281.3159156, 1795776281.3159156, 1795776281.3159156, '{"activityState":"active","attributes":{"route":"token"},"attributesType":"Ride","autoEndAt":1795805081.3159156,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776281.3159156,"device":"default","id":"C1CE1964-690F-4659-9624-B8C1FB4628D7","pushToken":"1adfcfcd99a56ec860bb1a09527234a9da2f71d777621f9f59da8e38e52ee5b6","pushType":"token","startedAt":1795776281.3159156,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('BA1B2B96-38AF-42B6-BC95-EE991750BBEE', 'com.example.upgrade', 'phone-2', 'Ride', 'active', NULL, 1795805081.4724402, 0, 1795776281.4724402, 1795776281.4724402, 1795776281.542842, '{"activityState":"active","attributes":{"route":"delivered"},"attributesType":"Ride","autoEndAt":1795805081.4724402,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":7}},"createdAt":1795776281.4724402,"device":"phone-2","id":"BA1B2B96-38AF-42B6-BC95-EE991750BBEE","lastUpdateTimestamp":1795776281.542842,"startedAt":1795776281.4724402,"style":"standard"}', NULL, DEFAULT);


--
-- Data for Name: activitytype; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: apikey; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.apikey VALUES ('023a64e944c31e8bacd086fd5c445d3ebdede9d385d3cdddcba040f44681bbf4', NULL, NULL, 1795776280.389309);
INSERT INTO public.apikey VALUES ('5067e7e089ff7fb2eeeeff3afe17f2583010dc2ee366b61658dbe6b1907d88aa', 'com.example.upgrade', NULL, 1795776280.9119534);


--
-- Data for Name: app; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.app VALUES ('com.example.upgrade', 'Upgrade', 1795776280.9116745, false);


--
-- Data for Name: appsettings; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: channel; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.channel VALUES ('QrtDJv3J7tqzFsCZmoDtug==', 'com.example.upgrade', 1, 1795776281.3946426, NULL, NULL, NULL, NULL);


--
-- Data for Name: delivery; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.delivery VALUES (2, 'activity:BA1B2B96-38AF-42B6-BC95-EE991750BBEE', 'BA1B2B96-38AF-42B6-BC95-EE991750BBEE', 'com.example.upgrade', 'phone-2', NULL, 'update', '{"aps":{"content-state":{"eta":7},"event":"update","timestamp":1795776281}}', false, 1795805081.542842, 'pending', 0, 1795776281.542842, NULL, 1795776281.542842, NULL, '45c59338-3e04-4aec-9399-12ddd5d2d6fc');
INSERT INTO public.delivery VALUES (1, 'activity:BA1B2B96-38AF-42B6-BC95-EE991750BBEE', 'BA1B2B96-38AF-42B6-BC95-EE991750BBEE', 'com.example.upgrade', 'phone-2', NULL, 'start', '{"aps":{"alert":{"body":"","title":"Upgrade"},"attributes":{"islet":"BA1B2B96-38AF-42B6-BC95-EE991750BBEE","route":"delivered"},"attributes-type":"Ride","content-state":{"eta":10},"event":"start","input-push-token":1,"timestamp":1795776281}}', true, 1795805081.4724402, 'sending', 1, 1795776281.4724402, 1795776341.5109887, 1795776281.4724402, NULL, '3f6887f1-81b8-44d2-b63f-b254d4f2d4a7');


--
-- Data for Name: deliverycredential; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.deliverycredential VALUES ('com.example.upgrade', 'development', 'TEAM123456', 'KEY7654321', '-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgmY8RVdoMLqouWqYt
NlEKU1TUPHaRK1S/H3O5i2KqNcahRANCAARLfigGTFG/Uwt16/T69N61mRD2GAhV
UbeiNl63Lym/2jvlBXo55vZ7WMpLMJXu87EuBz6wSyDdYJLV41GFgLAD
-----END PRIVATE KEY-----
', 'https://127.0.0.1:9', NULL, 1795776281.416553, NULL);


--
-- Data for Name: device; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.device VALUES ('default', 'Default', 1795776280.3477602);
INSERT INTO public.device VALUES ('phone-2', 'Second phone', 1795776280.927423);


--
-- Data for Name: event; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.event VALUES (1, 1795776280.9486434, 'started', 'com.example.upgrade', 'default', '10BD5C14-077F-4C51-B39F-B79A7132DFC8', '{"activityState":"active","attributes":{"route":"active"},"attributesType":"Ride","autoEndAt":1795805080.9486434,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776280.9486434,"device":"default","id":"10BD5C14-077F-4C51-B39F-B79A7132DFC8","startedAt":1795776280.9486434,"style":"standard"}');
INSERT INTO public.event VALUES (2, 1795776280.98771, 'contentUpdated', 'com.example.upgrade', 'default', '10BD5C14-077F-4C51-B39F-B79A7132DFC8', '{"content":{"relevanceScore":0,"state":{"eta":8}},"timestamp":1795776280.98771}');
INSERT INTO public.event VALUES (3, 1795776281.0165296, 'contentUpdated', 'com.example.upgrade', 'default', '10BD5C14-077F-4C51-B39F-B79A7132DFC8', '{"content":{"relevanceScore":0,"state":{"eta":6}},"timestamp":1795776281.0165296}');
INSERT INTO public.event VALUES (4, 1795776281.0165296, 'alert', 'com.example.upgrade', 'default', '10BD5C14-077F-4C51-B39F-B79A7132DFC8', '{"body":"6 minutes","title":"Closer"}');
INSERT INTO public.event VALUES (5, 1795776281.039424, 'started', 'com.example.upgrade', 'default', '532CD0A9-5031-4816-9B8B-6EBA5CC823F0', '{"activityState":"active","attributes":{"route":"ended"},"attributesType":"Ride","autoEndAt":1795805081.039424,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776281.039424,"device":"default","id":"532CD0A9-5031-4816-9B8B-6EBA5CC823F0","startedAt":1795776281.039424,"style":"standard"}');
INSERT INTO public.event VALUES (6, 1795776281.0801547, 'contentUpdated', 'com.example.upgrade', 'default', '532CD0A9-5031-4816-9B8B-6EBA5CC823F0', '{"content":{"relevanceScore":0,"state":{"eta":4}},"timestamp":1795776281.0801547}');
INSERT INTO public.event VALUES (7, 1795776281.1116056, 'contentUpdated', 'com.example.upgrade', 'default', '532CD0A9-5031-4816-9B8B-6EBA5CC823F0', '{"content":{"relevanceScore":0,"state":{"eta":0}},"timestamp":1795776281.1116056}');
INSERT INTO public.event VALUES (8, 1795776281.1116056, 'stateChanged', 'com.example.upgrade', 'default', '532CD0A9-5031-4816-9B8B-6EBA5CC823F0', '{"at":1795776281.1116056,"from":"active","reason":"endedByApp","to":"ended"}');
INSERT INTO public.event VALUES (9, 1795776281.1531096, 'started', 'com.example.upgrade', 'phone-2', '49AB85BF-43CA-4E42-83FA-51D1052BA20D', '{"activityState":"active","attributes":{"route":"dismissed"},"attributesType":"Ride","autoEndAt":1795805081.1531096,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776281.1531096,"device":"phone-2","id":"49AB85BF-43CA-4E42-83FA-51D1052BA20D","startedAt":1795776281.1531096,"style":"standard"}');
INSERT INTO public.event VALUES (10, 1795776281.1873298, 'stateChanged', 'com.example.upgrade', 'phone-2', '49AB85BF-43CA-4E42-83FA-51D1052BA20D', '{"at":1795776281.1873298,"from":"active","reason":"endedByApp","to":"ended"}');
INSERT INTO public.event VALUES (11, 1795776281.1873298, 'stateChanged', 'com.example.upgrade', 'phone-2', '49AB85BF-43CA-4E42-83FA-51D1052BA20D', '{"at":1795776281.1873298,"from":"ended","reason":"dismissalPolicy","to":"dismissed"}');
INSERT INTO public.event VALUES (12, 1795776281.2286937, 'started', 'com.example.upgrade', 'default', 'BE1EED71-A8BD-4A0D-AC07-B94390F3DFA0', '{"activityState":"active","attributes":{"route":"key"},"attributesType":"Ride","autoEndAt":1795805081.2286937,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":3}},"createdAt":1795776281.2286937,"device":"default","id":"BE1EED71-A8BD-4A0D-AC07-B94390F3DFA0","key":"order-7","startedAt":1795776281.2286937,"style":"standard"}');
INSERT INTO public.event VALUES (13, 1795776281.2761717, 'contentUpdated', 'com.example.upgrade', 'default', 'BE1EED71-A8BD-4A0D-AC07-B94390F3DFA0', '{"content":{"relevanceScore":0,"state":{"eta":2}},"timestamp":1795776281.2761717}');
INSERT INTO public.event VALUES (14, 1795776281.3159156, 'started', 'com.example.upgrade', 'default', 'C1CE1964-690F-4659-9624-B8C1FB4628D7', '{"activityState":"active","attributes":{"route":"token"},"attributesType":"Ride","autoEndAt":1795805081.3159156,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776281.3159156,"device":"default","id":"C1CE1964-690F-4659-9624-B8C1FB4628D7","pushToken":"1adfcfcd99a56ec860bb1a09527234a9da2f71d777621f9f59da8e38e52ee5b6","pushType":"token","startedAt":1795776281.3159156,"style":"standard"}');
INSERT INTO public.event VALUES (15, 1795776281.3159156, 'pushTokenUpdated', 'com.example.upgrade', 'default', 'C1CE1964-690F-4659-9624-B8C1FB4628D7', '{"kind":"activity","pushToken":"1adfcfcd99a56ec860bb1a09527234a9da2f71d777621f9f59da8e38e52ee5b6"}');
INSERT INTO public.event VALUES (16, 1795776281.4724402, 'started', 'com.example.upgrade', 'phone-2', 'BA1B2B96-38AF-42B6-BC95-EE991750BBEE', '{"activityState":"active","attributes":{"route":"delivered"},"attributesType":"Ride","autoEndAt":1795805081.4724402,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776281.4724402,"device":"phone-2","id":"BA1B2B96-38AF-42B6-BC95-EE991750BBEE","startedAt":1795776281.4724402,"style":"standard"}');
INSERT INTO public.event VALUES (17, 1795776281.4724402, 'delivery', 'com.example.upgrade', 'phone-2', 'BA1B2B96-38AF-42B6-BC95-EE991750BBEE', '{"attempt":0,"delivery":1,"event":"start","note":"push-to-start to abababab…abababab (development); an alert supplied (\"Upgrade\"): a push-to-start needs one","outcome":"queued"}');
INSERT INTO public.event VALUES (18, 1795776281.542842, 'contentUpdated', 'com.example.upgrade', 'phone-2', 'BA1B2B96-38AF-42B6-BC95-EE991750BBEE', '{"content":{"relevanceScore":0,"state":{"eta":7}},"timestamp":1795776281.542842}');
INSERT INTO public.event VALUES (19, 1795776281.542842, 'delivery', 'com.example.upgrade', 'phone-2', 'BA1B2B96-38AF-42B6-BC95-EE991750BBEE', '{"attempt":0,"delivery":2,"event":"update","outcome":"queued"}');


--
-- Data for Name: islet_migration; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.islet_migration VALUES (1, 'the tables of SQLite''s v10, events numbered at commit', '2026-11-27 10:44:39.939292+00');
INSERT INTO public.islet_migration VALUES (2, 'activities listed page by page in relevance order', '2026-11-27 10:44:40.192602+00');


--
-- Data for Name: layout; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: phoneactivity; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.phoneactivity VALUES ('BA1B2B96-38AF-42B6-BC95-EE991750BBEE', 'com.example.upgrade', 'phone-2', 'development', NULL, 'active', '');


--
-- Data for Name: phonetoken; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.phonetoken VALUES ('abababababababababababababababababababababababababababababababab', 'pushToStart', 'com.example.upgrade', 'phone-2', 'Ride', NULL, 'development', 1795776281.4474607, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.phonetoken VALUES ('cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd', 'update', 'com.example.upgrade', 'phone-2', NULL, 'BA1B2B96-38AF-42B6-BC95-EE991750BBEE', 'development', 1795776281.5167484, NULL, NULL, NULL, NULL, NULL, NULL);


--
-- Data for Name: providerkey; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.providerkey VALUES ('KEY1234567', 'TEAM123456', 'com.example.upgrade', '-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEzXJpbeOHqaD4t0NmJSiGGEWegu7+
yispyf939FURaUkQ6kPFU/XyfZe2/VuWyCEfdc+faGstUnWQEY1wrXVVPA==
-----END PUBLIC KEY-----
', 1795776281.3560407);


--
-- Data for Name: pushtoken; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.pushtoken VALUES ('a008c9ccd333df4c089e4e1ba2e5ba7cfffe40f0ba6686e0d850db6625b75e36', 'pushToStart', NULL, 'default', 'com.example.upgrade', 1795776280.9119534, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('348f7e787f29e9b2658049894a9cf2bebbc1dcdb2fcb444972ea6b55dce1b300', 'pushToStart', NULL, 'phone-2', 'com.example.upgrade', 1795776280.9274445, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('1adfcfcd99a56ec860bb1a09527234a9da2f71d777621f9f59da8e38e52ee5b6', 'activity', 'C1CE1964-690F-4659-9624-B8C1FB4628D7', 'default', 'com.example.upgrade', 1795776281.3159156, NULL, NULL);


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


