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

INSERT INTO public.activity VALUES ('0C5036C0-564C-48D6-9BFC-E16AE524BAAE', 'com.example.upgrade', 'default', 'Ride', 'active', NULL, 1795805280.0206885, 0, 1795776480.0206885, 1795776480.0206885, 1795776480.0973103, '{"activityState":"active","attributes":{"route":"active"},"attributesType":"Ride","autoEndAt":1795805280.0206885,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":6}},"createdAt":1795776480.0206885,"device":"default","id":"0C5036C0-564C-48D6-9BFC-E16AE524BAAE","lastUpdateTimestamp":1795776480.0973103,"startedAt":1795776480.0206885,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('54763E4C-CF12-4EB3-8FA4-538FC21320DB', 'com.example.upgrade', 'default', 'Ride', 'ended', NULL, 1795790880.1949463, 0, 1795776480.1202784, 1795776480.1202784, 1795776480.1949463, '{"activityState":"ended","attributes":{"route":"ended"},"attributesType":"Ride","autoEndAt":1795805280.1202784,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":0}},"createdAt":1795776480.1202784,"device":"default","dismissAt":1795790880.1949463,"endedAt":1795776480.1949463,"id":"54763E4C-CF12-4EB3-8FA4-538FC21320DB","lastUpdateTimestamp":1795776480.1949463,"startedAt":1795776480.1202784,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('63537C36-929D-4473-B404-E754E961E055', 'com.example.upgrade', 'phone-2', 'Ride', 'dismissed', NULL, NULL, 0, 1795776480.2164986, 1795776480.2164986, 1795776480.25175, '{"activityState":"dismissed","attributes":{"route":"dismissed"},"attributesType":"Ride","autoEndAt":1795805280.2164986,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776480.2164986,"device":"phone-2","dismissAt":1795776480.25175,"dismissedAt":1795776480.25175,"endedAt":1795776480.25175,"id":"63537C36-929D-4473-B404-E754E961E055","startedAt":1795776480.2164986,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('0BB98ACA-91F1-4EDE-B563-50581E7D08B5', 'com.example.upgrade', 'default', 'Ride', 'active', 'order-7', 1795805280.2632294, 0, 1795776480.2632294, 1795776480.2632294, 1795776480.298935, '{"activityState":"active","attributes":{"route":"key"},"attributesType":"Ride","autoEndAt":1795805280.2632294,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":2}},"createdAt":1795776480.2632294,"device":"default","id":"0BB98ACA-91F1-4EDE-B563-50581E7D08B5","key":"order-7","lastUpdateTimestamp":1795776480.298935,"startedAt":1795776480.2632294,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('ABBAF1B6-18E7-4D34-908E-ADF77EEE7C85', 'com.example.upgrade', 'default', 'Ride', 'active', NULL, 1795805280.3389516, 0, 1795776480.3389516, 1795776480.3389516, 1795776480.3389516, '{"activityState":"active","attributes":{"route":"token"},"attributesType":"Ride","autoEndAt":1795805280.3389516,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776480.3389516,"device":"default","id":"ABBAF1B6-18E7-4D34-908E-ADF77EEE7C85","pushToken":"ac00c056e34c0ed8c45f3a06ebfd2f959247112913baa82f6abf68b0443f4a76","pushType":"token","startedAt":1795776480.3389516,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('9FEF5340-C63E-4CC6-8B37-A53E3197A483', 'com.example.upgrade', 'phone-2', 'Ride', 'active', NULL, 1795805280.4546442, 0, 1795776480.4546442, 1795776480.4546442, 1795776480.5501225, '{"activityState":"active","attributes":{"route":"delivered"},"attributesType":"Ride","autoEndAt":1795805280.4546442,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":7}},"createdAt":1795776480.4546442,"device":"phone-2","id":"9FEF5340-C63E-4CC6-8B37-A53E3197A483","lastUpdateTimestamp":1795776480.5501225,"startedAt":1795776480.4546442,"style":"standard"}', NULL, DEFAULT);


--
-- Data for Name: activitytype; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: apikey; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.apikey VALUES ('c09e49de74a98ce0d38fd98ad1f6c12c582c34e0bc8bd4434f4049ed23442243', NULL, NULL, 1795776479.3943925);
INSERT INTO public.apikey VALUES ('8789566c729d7d9a5b261d14aa0c808d1e9ad0822db8cdcabfc8cfe80583224c', 'com.example.upgrade', NULL, 1795776479.9408522);


--
-- Data for Name: app; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.app VALUES ('com.example.upgrade', 'Upgrade', 1795776479.9405723, false, false);


--
-- Data for Name: appsettings; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: channel; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.channel VALUES ('XeBBlXOgZTwb77y1qtbmNA==', 'com.example.upgrade', 1, 1795776480.398076, NULL, NULL, NULL, NULL);


--
-- Data for Name: delivery; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.delivery VALUES (1, 'activity:9FEF5340-C63E-4CC6-8B37-A53E3197A483', '9FEF5340-C63E-4CC6-8B37-A53E3197A483', 'com.example.upgrade', 'phone-2', NULL, 'start', '{"aps":{"alert":{"body":"","title":"Upgrade"},"attributes":{"islet":"9FEF5340-C63E-4CC6-8B37-A53E3197A483","route":"delivered"},"attributes-type":"Ride","content-state":{"eta":10},"event":"start","input-push-token":1,"timestamp":1795776480}}', true, 1795805280.4546442, 'sending', 1, 1795776480.4546442, 1795776540.4823997, 1795776480.4546442, NULL, '77f1e11b-5094-4646-a4d7-8129bc9e65e9');
INSERT INTO public.delivery VALUES (2, 'activity:9FEF5340-C63E-4CC6-8B37-A53E3197A483', '9FEF5340-C63E-4CC6-8B37-A53E3197A483', 'com.example.upgrade', 'phone-2', NULL, 'update', '{"aps":{"content-state":{"eta":7},"event":"update","timestamp":1795776480}}', false, 1795805280.5501225, 'pending', 0, 1795776480.5501225, NULL, 1795776480.5501225, NULL, 'caa2b0fd-5c92-4a1c-b89e-603f87c8f3e2');


--
-- Data for Name: deliverycredential; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.deliverycredential VALUES ('com.example.upgrade', 'development', 'TEAM123456', 'KEY7654321', '-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg8aYeeZ4oZRmo9ixm
cAtPulMcD48lCei6KVLsN9XcWRGhRANCAAR9Ous0T/LNqta9zfCuWU8Q1t9FN9Bd
uU3qxQvxrBw0yi3T1vCLSBLFqmzchaBcp8WR0hTpKUYXo7IUF7S/N4mG
-----END PRIVATE KEY-----
', 'https://127.0.0.1:9', NULL, 1795776480.4113312, NULL);


--
-- Data for Name: device; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.device VALUES ('default', 'Default', 1795776479.3307788);
INSERT INTO public.device VALUES ('phone-2', 'Second phone', 1795776479.9849186);


--
-- Data for Name: event; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.event VALUES (1, 1795776480.0206885, 'started', 'com.example.upgrade', 'default', '0C5036C0-564C-48D6-9BFC-E16AE524BAAE', '{"activityState":"active","attributes":{"route":"active"},"attributesType":"Ride","autoEndAt":1795805280.0206885,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776480.0206885,"device":"default","id":"0C5036C0-564C-48D6-9BFC-E16AE524BAAE","startedAt":1795776480.0206885,"style":"standard"}');
INSERT INTO public.event VALUES (2, 1795776480.0700378, 'contentUpdated', 'com.example.upgrade', 'default', '0C5036C0-564C-48D6-9BFC-E16AE524BAAE', '{"content":{"relevanceScore":0,"state":{"eta":8}},"timestamp":1795776480.0700378}');
INSERT INTO public.event VALUES (3, 1795776480.0973103, 'contentUpdated', 'com.example.upgrade', 'default', '0C5036C0-564C-48D6-9BFC-E16AE524BAAE', '{"content":{"relevanceScore":0,"state":{"eta":6}},"timestamp":1795776480.0973103}');
INSERT INTO public.event VALUES (4, 1795776480.0973103, 'alert', 'com.example.upgrade', 'default', '0C5036C0-564C-48D6-9BFC-E16AE524BAAE', '{"body":"6 minutes","title":"Closer"}');
INSERT INTO public.event VALUES (5, 1795776480.1202784, 'started', 'com.example.upgrade', 'default', '54763E4C-CF12-4EB3-8FA4-538FC21320DB', '{"activityState":"active","attributes":{"route":"ended"},"attributesType":"Ride","autoEndAt":1795805280.1202784,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776480.1202784,"device":"default","id":"54763E4C-CF12-4EB3-8FA4-538FC21320DB","startedAt":1795776480.1202784,"style":"standard"}');
INSERT INTO public.event VALUES (6, 1795776480.1635823, 'contentUpdated', 'com.example.upgrade', 'default', '54763E4C-CF12-4EB3-8FA4-538FC21320DB', '{"content":{"relevanceScore":0,"state":{"eta":4}},"timestamp":1795776480.1635823}');
INSERT INTO public.event VALUES (7, 1795776480.1949463, 'contentUpdated', 'com.example.upgrade', 'default', '54763E4C-CF12-4EB3-8FA4-538FC21320DB', '{"content":{"relevanceScore":0,"state":{"eta":0}},"timestamp":1795776480.1949463}');
INSERT INTO public.event VALUES (8, 1795776480.1949463, 'stateChanged', 'com.example.upgrade', 'default', '54763E4C-CF12-4EB3-8FA4-538FC21320DB', '{"at":1795776480.1949463,"from":"active","reason":"endedByApp","to":"ended"}');
INSERT INTO public.event VALUES (9, 1795776480.2164986, 'started', 'com.example.upgrade', 'phone-2', '63537C36-929D-4473-B404-E754E961E055', '{"activityState":"active","attributes":{"route":"dismissed"},"attributesType":"Ride","autoEndAt":1795805280.2164986,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776480.2164986,"device":"phone-2","id":"63537C36-929D-4473-B404-E754E961E055","startedAt":1795776480.2164986,"style":"standard"}');
INSERT INTO public.event VALUES (10, 1795776480.25175, 'stateChanged', 'com.example.upgrade', 'phone-2', '63537C36-929D-4473-B404-E754E961E055', '{"at":1795776480.25175,"from":"active","reason":"endedByApp","to":"ended"}');
INSERT INTO public.event VALUES (11, 1795776480.25175, 'stateChanged', 'com.example.upgrade', 'phone-2', '63537C36-929D-4473-B404-E754E961E055', '{"at":1795776480.25175,"from":"ended","reason":"dismissalPolicy","to":"dismissed"}');
INSERT INTO public.event VALUES (12, 1795776480.2632294, 'started', 'com.example.upgrade', 'default', '0BB98ACA-91F1-4EDE-B563-50581E7D08B5', '{"activityState":"active","attributes":{"route":"key"},"attributesType":"Ride","autoEndAt":1795805280.2632294,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":3}},"createdAt":1795776480.2632294,"device":"default","id":"0BB98ACA-91F1-4EDE-B563-50581E7D08B5","key":"order-7","startedAt":1795776480.2632294,"style":"standard"}');
INSERT INTO public.event VALUES (13, 1795776480.298935, 'contentUpdated', 'com.example.upgrade', 'default', '0BB98ACA-91F1-4EDE-B563-50581E7D08B5', '{"content":{"relevanceScore":0,"state":{"eta":2}},"timestamp":1795776480.298935}');
INSERT INTO public.event VALUES (14, 1795776480.3389516, 'started', 'com.example.upgrade', 'default', 'ABBAF1B6-18E7-4D34-908E-ADF77EEE7C85', '{"activityState":"active","attributes":{"route":"token"},"attributesType":"Ride","autoEndAt":1795805280.3389516,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776480.3389516,"device":"default","id":"ABBAF1B6-18E7-4D34-908E-ADF77EEE7C85","pushToken":"ac00c056e34c0ed8c45f3a06ebfd2f959247112913baa82f6abf68b0443f4a76","pushType":"token","startedAt":1795776480.3389516,"style":"standard"}');
INSERT INTO public.event VALUES (15, 1795776480.3389516, 'pushTokenUpdated', 'com.example.upgrade', 'default', 'ABBAF1B6-18E7-4D34-908E-ADF77EEE7C85', '{"kind":"activity","pushToken":"ac00c056e34c0ed8c45f3a06ebfd2f959247112913baa82f6abf68b0443f4a76"}');
INSERT INTO public.event VALUES (16, 1795776480.4546442, 'started', 'com.example.upgrade', 'phone-2', '9FEF5340-C63E-4CC6-8B37-A53E3197A483', '{"activityState":"active","attributes":{"route":"delivered"},"attributesType":"Ride","autoEndAt":1795805280.4546442,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776480.4546442,"device":"phone-2","id":"9FEF5340-C63E-4CC6-8B37-A53E3197A483","startedAt":1795776480.4546442,"style":"standard"}');
INSERT INTO public.event VALUES (17, 1795776480.4546442, 'delivery', 'com.example.upgrade', 'phone-2', '9FEF5340-C63E-4CC6-8B37-A53E3197A483', '{"attempt":0,"delivery":1,"event":"start","note":"push-to-start to abababab…abababab (development); an alert supplied (\"Upgrade\"): a push-to-start needs one","outcome":"queued"}');
INSERT INTO public.event VALUES (18, 1795776480.5501225, 'contentUpdated', 'com.example.upgrade', 'phone-2', '9FEF5340-C63E-4CC6-8B37-A53E3197A483', '{"content":{"relevanceScore":0,"state":{"eta":7}},"timestamp":1795776480.5501225}');
INSERT INTO public.event VALUES (19, 1795776480.5501225, 'delivery', 'com.example.upgrade', 'phone-2', '9FEF5340-C63E-4CC6-8B37-A53E3197A483', '{"attempt":0,"delivery":2,"event":"update","outcome":"queued"}');


--
-- Data for Name: islet_migration; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.islet_migration VALUES (1, 'the tables of SQLite''s v10, events numbered at commit', '2026-11-27 10:47:58.752418+00');
INSERT INTO public.islet_migration VALUES (2, 'activities listed page by page in relevance order', '2026-11-27 10:47:59.055288+00');
INSERT INTO public.islet_migration VALUES (3, 'an app''s delivery paused', '2026-11-27 10:47:59.138971+00');
INSERT INTO public.islet_migration VALUES (4, 'room on activity pages for updates in place', '2026-11-27 10:47:59.154976+00');


--
-- Data for Name: layout; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: phoneactivity; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.phoneactivity VALUES ('9FEF5340-C63E-4CC6-8B37-A53E3197A483', 'com.example.upgrade', 'phone-2', 'development', NULL, 'active', '');


--
-- Data for Name: phonetoken; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.phonetoken VALUES ('abababababababababababababababababababababababababababababababab', 'pushToStart', 'com.example.upgrade', 'phone-2', 'Ride', NULL, 'development', 1795776480.4318366, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.phonetoken VALUES ('cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd', 'update', 'com.example.upgrade', 'phone-2', NULL, '9FEF5340-C63E-4CC6-8B37-A53E3197A483', 'development', 1795776480.496016, NULL, NULL, NULL, NULL, NULL, NULL);


--
-- Data for Name: providerkey; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.providerkey VALUES ('KEY1234567', 'TEAM123456', 'com.example.upgrade', '-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE8EKY/XeEZt1T49jvkVtB8EFk48QM
IoHdEV4pNqGvJIl3q3HiU22lIcEsafVfKoGyNtNoLZU0ZNIMgK5A+lLqmA==
-----END PUBLIC KEY-----
', 1795776480.380384);


--
-- Data for Name: pushtoken; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.pushtoken VALUES ('0e817da0212eae4e8ebd7f321674a97c8989757c38ae8fdb261ea07ec720cbd1', 'pushToStart', NULL, 'default', 'com.example.upgrade', 1795776479.9408522, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('5446c03983e90bae18b680d638922b3e6ff48a1295e133cefaee66e2358fa76e', 'pushToStart', NULL, 'phone-2', 'com.example.upgrade', 1795776479.9849348, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('ac00c056e34c0ed8c45f3a06ebfd2f959247112913baa82f6abf68b0443f4a76', 'activity', 'ABBAF1B6-18E7-4D34-908E-ADF77EEE7C85', 'default', 'com.example.upgrade', 1795776480.3389516, NULL, NULL);


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


