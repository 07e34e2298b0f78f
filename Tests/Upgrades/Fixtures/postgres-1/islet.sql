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
    channelid text
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

INSERT INTO public.activity VALUES ('2EE3D135-ACE8-4D1B-97D5-5ED5A6A60399', 'com.example.upgrade', 'default', 'Ride', 'active', NULL, 1795805008.4630558, 0, 1795776208.4630558, 1795776208.4630558, 1795776208.5127158, '{"activityState":"active","attributes":{"route":"active"},"attributesType":"Ride","autoEndAt":1795805008.4630558,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":6}},"createdAt":1795776208.4630558,"device":"default","id":"2EE3D135-ACE8-4D1B-97D5-5ED5A6A60399","lastUpdateTimestamp":1795776208.5127158,"startedAt":1795776208.4630558,"style":"standard"}', NULL);
INSERT INTO public.activity VALUES ('A35A8E41-B709-47E4-916E-2A11F8C2BF9C', 'com.example.upgrade', 'default', 'Ride', 'ended', NULL, 1795790608.5761163, 0, 1795776208.532384, 1795776208.532384, 1795776208.5761163, '{"activityState":"ended","attributes":{"route":"ended"},"attributesType":"Ride","autoEndAt":1795805008.532384,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":0}},"createdAt":1795776208.532384,"device":"default","dismissAt":1795790608.5761163,"endedAt":1795776208.5761163,"id":"A35A8E41-B709-47E4-916E-2A11F8C2BF9C","lastUpdateTimestamp":1795776208.5761163,"startedAt":1795776208.532384,"style":"standard"}', NULL);
INSERT INTO public.activity VALUES ('DDE9BBB8-CFEA-443A-8483-DCAFD98E5EFB', 'com.example.upgrade', 'phone-2', 'Ride', 'dismissed', NULL, NULL, 0, 1795776208.5957227, 1795776208.5957227, 1795776208.622787, '{"activityState":"dismissed","attributes":{"route":"dismissed"},"attributesType":"Ride","autoEndAt":1795805008.5957227,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776208.5957227,"device":"phone-2","dismissAt":1795776208.622787,"dismissedAt":1795776208.622787,"endedAt":1795776208.622787,"id":"DDE9BBB8-CFEA-443A-8483-DCAFD98E5EFB","startedAt":1795776208.5957227,"style":"standard"}', NULL);
INSERT INTO public.activity VALUES ('EC1F0449-1377-4A20-8C9A-080FFB4C049D', 'com.example.upgrade', 'default', 'Ride', 'active', 'order-7', 1795805008.6448617, 0, 1795776208.6448617, 1795776208.6448617, 1795776208.6749866, '{"activityState":"active","attributes":{"route":"key"},"attributesType":"Ride","autoEndAt":1795805008.6448617,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":2}},"createdAt":1795776208.6448617,"device":"default","id":"EC1F0449-1377-4A20-8C9A-080FFB4C049D","key":"order-7","lastUpdateTimestamp":1795776208.6749866,"startedAt":1795776208.6448617,"style":"standard"}', NULL);
INSERT INTO public.activity VALUES ('CBB8DE57-1E8E-4C30-A52A-85B8A211EDC3', 'com.example.upgrade', 'default', 'Ride', 'active', NULL, 1795805008.6995454, 0, 1795776208.6995454, 1795776208.6995454, 1795776208.6995454, '{"activityState":"active","attributes":{"route":"token"},"attributesType":"Ride","autoEndAt":1795805008.6995454,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776208.6995454,"device":"default","id":"CBB8DE57-1E8E-4C30-A52A-85B8A211EDC3","pushToken":"54c73a234a9e48f1b1f9bf470ac77df08148efc1a34d92bed393f16d8a776302","pushType":"token","startedAt":1795776208.6995454,"style":"standard"}', NULL);
INSERT INTO public.activity VALUES ('B6B0D774-505D-438F-90AC-313CF4115F27', 'com.example.upgrade', 'phone-2', 'Ride', 'active', NULL, 1795805008.8053212, 0, 1795776208.8053212, 1795776208.8053212, 1795776208.8682508, '{"activityState":"active","attributes":{"route":"delivered"},"attributesType":"Ride","autoEndAt":1795805008.8053212,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":7}},"createdAt":1795776208.8053212,"device":"phone-2","id":"B6B0D774-505D-438F-90AC-313CF4115F27","lastUpdateTimestamp":1795776208.8682508,"startedAt":1795776208.8053212,"style":"standard"}', NULL);


--
-- Data for Name: activitytype; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: apikey; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.apikey VALUES ('ee2666673a1a625bbb232b4e861022b95c9e59d85dc9cdbfff7b427406e999a2', NULL, NULL, 1795776208.0348701);
INSERT INTO public.apikey VALUES ('20e8489fdc3310b7e0703c5a2a8a1b5d5609a56246792d67c8077f7c2d57c326', 'com.example.upgrade', NULL, 1795776208.4263248);


--
-- Data for Name: app; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.app VALUES ('com.example.upgrade', 'Upgrade', 1795776208.426027, false);


--
-- Data for Name: appsettings; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: channel; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.channel VALUES ('EJXaRpxM3eu4tbxAzkYOXA==', 'com.example.upgrade', 1, 1795776208.7498803, NULL, NULL, NULL, NULL);


--
-- Data for Name: delivery; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.delivery VALUES (1, 'activity:B6B0D774-505D-438F-90AC-313CF4115F27', 'B6B0D774-505D-438F-90AC-313CF4115F27', 'com.example.upgrade', 'phone-2', NULL, 'start', '{"aps":{"alert":{"body":"","title":"Upgrade"},"attributes":{"islet":"B6B0D774-505D-438F-90AC-313CF4115F27","route":"delivered"},"attributes-type":"Ride","content-state":{"eta":10},"event":"start","input-push-token":1,"timestamp":1795776208}}', true, 1795805008.8053212, 'sending', 1, 1795776208.8053212, 1795776268.831961, 1795776208.8053212, NULL, 'a0fe42e7-666e-4ff4-bef4-ef0ae5d65d29');
INSERT INTO public.delivery VALUES (2, 'activity:B6B0D774-505D-438F-90AC-313CF4115F27', 'B6B0D774-505D-438F-90AC-313CF4115F27', 'com.example.upgrade', 'phone-2', NULL, 'update', '{"aps":{"content-state":{"eta":7},"event":"update","timestamp":1795776208}}', false, 1795805008.8682508, 'pending', 0, 1795776208.8682508, NULL, 1795776208.8682508, NULL, '54663be0-6688-420d-91f5-3d6572a96ba0');


--
-- Data for Name: deliverycredential; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.deliverycredential VALUES ('com.example.upgrade', 'development', 'TEAM123456', 'KEY7654321', '-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQglRypt3AqIxlbA4Cj
JS7gAZL0EsacgGRGDvUJQ3WpmfGhRANCAARaSxy/CiH2s5wmY1Q4JgUDnPrjd9SF
wmVjgysvDmyVzriT+BCOd3k+ivnBy1GADeL9G11mFfBgbX9M/608VHsR
-----END PRIVATE KEY-----
', 'https://127.0.0.1:9', NULL, 1795776208.7669508, NULL);


--
-- Data for Name: device; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.device VALUES ('default', 'Default', 1795776208.01322);
INSERT INTO public.device VALUES ('phone-2', 'Second phone', 1795776208.4440255);


--
-- Data for Name: event; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.event VALUES (1, 1795776208.4630558, 'started', 'com.example.upgrade', 'default', '2EE3D135-ACE8-4D1B-97D5-5ED5A6A60399', '{"activityState":"active","attributes":{"route":"active"},"attributesType":"Ride","autoEndAt":1795805008.4630558,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776208.4630558,"device":"default","id":"2EE3D135-ACE8-4D1B-97D5-5ED5A6A60399","startedAt":1795776208.4630558,"style":"standard"}');
INSERT INTO public.event VALUES (2, 1795776208.4954252, 'contentUpdated', 'com.example.upgrade', 'default', '2EE3D135-ACE8-4D1B-97D5-5ED5A6A60399', '{"content":{"relevanceScore":0,"state":{"eta":8}},"timestamp":1795776208.4954252}');
INSERT INTO public.event VALUES (3, 1795776208.5127158, 'contentUpdated', 'com.example.upgrade', 'default', '2EE3D135-ACE8-4D1B-97D5-5ED5A6A60399', '{"content":{"relevanceScore":0,"state":{"eta":6}},"timestamp":1795776208.5127158}');
INSERT INTO public.event VALUES (4, 1795776208.5127158, 'alert', 'com.example.upgrade', 'default', '2EE3D135-ACE8-4D1B-97D5-5ED5A6A60399', '{"body":"6 minutes","title":"Closer"}');
INSERT INTO public.event VALUES (5, 1795776208.532384, 'started', 'com.example.upgrade', 'default', 'A35A8E41-B709-47E4-916E-2A11F8C2BF9C', '{"activityState":"active","attributes":{"route":"ended"},"attributesType":"Ride","autoEndAt":1795805008.532384,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776208.532384,"device":"default","id":"A35A8E41-B709-47E4-916E-2A11F8C2BF9C","startedAt":1795776208.532384,"style":"standard"}');
INSERT INTO public.event VALUES (6, 1795776208.5596347, 'contentUpdated', 'com.example.upgrade', 'default', 'A35A8E41-B709-47E4-916E-2A11F8C2BF9C', '{"content":{"relevanceScore":0,"state":{"eta":4}},"timestamp":1795776208.5596347}');
INSERT INTO public.event VALUES (7, 1795776208.5761163, 'contentUpdated', 'com.example.upgrade', 'default', 'A35A8E41-B709-47E4-916E-2A11F8C2BF9C', '{"content":{"relevanceScore":0,"state":{"eta":0}},"timestamp":1795776208.5761163}');
INSERT INTO public.event VALUES (8, 1795776208.5761163, 'stateChanged', 'com.example.upgrade', 'default', 'A35A8E41-B709-47E4-916E-2A11F8C2BF9C', '{"at":1795776208.5761163,"from":"active","reason":"endedByApp","to":"ended"}');
INSERT INTO public.event VALUES (9, 1795776208.5957227, 'started', 'com.example.upgrade', 'phone-2', 'DDE9BBB8-CFEA-443A-8483-DCAFD98E5EFB', '{"activityState":"active","attributes":{"route":"dismissed"},"attributesType":"Ride","autoEndAt":1795805008.5957227,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776208.5957227,"device":"phone-2","id":"DDE9BBB8-CFEA-443A-8483-DCAFD98E5EFB","startedAt":1795776208.5957227,"style":"standard"}');
INSERT INTO public.event VALUES (10, 1795776208.622787, 'stateChanged', 'com.example.upgrade', 'phone-2', 'DDE9BBB8-CFEA-443A-8483-DCAFD98E5EFB', '{"at":1795776208.622787,"from":"active","reason":"endedByApp","to":"ended"}');
INSERT INTO public.event VALUES (11, 1795776208.622787, 'stateChanged', 'com.example.upgrade', 'phone-2', 'DDE9BBB8-CFEA-443A-8483-DCAFD98E5EFB', '{"at":1795776208.622787,"from":"ended","reason":"dismissalPolicy","to":"dismissed"}');
INSERT INTO public.event VALUES (12, 1795776208.6448617, 'started', 'com.example.upgrade', 'default', 'EC1F0449-1377-4A20-8C9A-080FFB4C049D', '{"activityState":"active","attributes":{"route":"key"},"attributesType":"Ride","autoEndAt":1795805008.6448617,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":3}},"createdAt":1795776208.6448617,"device":"default","id":"EC1F0449-1377-4A20-8C9A-080FFB4C049D","key":"order-7","startedAt":1795776208.6448617,"style":"standard"}');
INSERT INTO public.event VALUES (13, 1795776208.6749866, 'contentUpdated', 'com.example.upgrade', 'default', 'EC1F0449-1377-4A20-8C9A-080FFB4C049D', '{"content":{"relevanceScore":0,"state":{"eta":2}},"timestamp":1795776208.6749866}');
INSERT INTO public.event VALUES (14, 1795776208.6995454, 'started', 'com.example.upgrade', 'default', 'CBB8DE57-1E8E-4C30-A52A-85B8A211EDC3', '{"activityState":"active","attributes":{"route":"token"},"attributesType":"Ride","autoEndAt":1795805008.6995454,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776208.6995454,"device":"default","id":"CBB8DE57-1E8E-4C30-A52A-85B8A211EDC3","pushToken":"54c73a234a9e48f1b1f9bf470ac77df08148efc1a34d92bed393f16d8a776302","pushType":"token","startedAt":1795776208.6995454,"style":"standard"}');
INSERT INTO public.event VALUES (15, 1795776208.6995454, 'pushTokenUpdated', 'com.example.upgrade', 'default', 'CBB8DE57-1E8E-4C30-A52A-85B8A211EDC3', '{"kind":"activity","pushToken":"54c73a234a9e48f1b1f9bf470ac77df08148efc1a34d92bed393f16d8a776302"}');
INSERT INTO public.event VALUES (16, 1795776208.8053212, 'started', 'com.example.upgrade', 'phone-2', 'B6B0D774-505D-438F-90AC-313CF4115F27', '{"activityState":"active","attributes":{"route":"delivered"},"attributesType":"Ride","autoEndAt":1795805008.8053212,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776208.8053212,"device":"phone-2","id":"B6B0D774-505D-438F-90AC-313CF4115F27","startedAt":1795776208.8053212,"style":"standard"}');
INSERT INTO public.event VALUES (17, 1795776208.8053212, 'delivery', 'com.example.upgrade', 'phone-2', 'B6B0D774-505D-438F-90AC-313CF4115F27', '{"attempt":0,"delivery":1,"event":"start","note":"push-to-start to abababab…abababab (development); an alert supplied (\"Upgrade\"): a push-to-start needs one","outcome":"queued"}');
INSERT INTO public.event VALUES (18, 1795776208.8682508, 'contentUpdated', 'com.example.upgrade', 'phone-2', 'B6B0D774-505D-438F-90AC-313CF4115F27', '{"content":{"relevanceScore":0,"state":{"eta":7}},"timestamp":1795776208.8682508}');
INSERT INTO public.event VALUES (19, 1795776208.8682508, 'delivery', 'com.example.upgrade', 'phone-2', 'B6B0D774-505D-438F-90AC-313CF4115F27', '{"attempt":0,"delivery":2,"event":"update","outcome":"queued"}');


--
-- Data for Name: islet_migration; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.islet_migration VALUES (1, 'the tables of SQLite''s v10, events numbered at commit', '2026-11-27 10:43:27.706491+00');


--
-- Data for Name: layout; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: phoneactivity; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.phoneactivity VALUES ('B6B0D774-505D-438F-90AC-313CF4115F27', 'com.example.upgrade', 'phone-2', 'development', NULL, 'active', '');


--
-- Data for Name: phonetoken; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.phonetoken VALUES ('abababababababababababababababababababababababababababababababab', 'pushToStart', 'com.example.upgrade', 'phone-2', 'Ride', NULL, 'development', 1795776208.7871904, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.phonetoken VALUES ('cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd', 'update', 'com.example.upgrade', 'phone-2', NULL, 'B6B0D774-505D-438F-90AC-313CF4115F27', 'development', 1795776208.8350315, NULL, NULL, NULL, NULL, NULL, NULL);


--
-- Data for Name: providerkey; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.providerkey VALUES ('KEY1234567', 'TEAM123456', 'com.example.upgrade', '-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEE2/x2+w5uI0wGfzHX12xK8SwBtrk
daDoFH/2b/mVQ2rH/Mvnm+mZIp+cXGlCrL1rqS2yaGaars3bLIeKBMtOeg==
-----END PUBLIC KEY-----
', 1795776208.7272382);


--
-- Data for Name: pushtoken; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.pushtoken VALUES ('f057f7e49f3326051117aed8de8f8fe86f33691f66ed483dd5d255665f26b10a', 'pushToStart', NULL, 'default', 'com.example.upgrade', 1795776208.4263248, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('eaed15a94f134710548eb608eab58a71c0e159482401dca68e77641760516dde', 'pushToStart', NULL, 'phone-2', 'com.example.upgrade', 1795776208.4440486, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('54c73a234a9e48f1b1f9bf470ac77df08148efc1a34d92bed393f16d8a776302', 'activity', 'CBB8DE57-1E8E-4C30-A52A-85B8A211EDC3', 'default', 'com.example.upgrade', 1795776208.6995454, NULL, NULL);


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


