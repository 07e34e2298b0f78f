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

INSERT INTO public.activity VALUES ('06F686DB-997F-433B-8C3C-1776E53C9064', 'com.example.upgrade', 'default', 'Ride', 'active', NULL, 1795805174.1315913, 0, 1795776374.1315913, 1795776374.1315913, 1795776374.1999836, '{"activityState":"active","attributes":{"route":"active"},"attributesType":"Ride","autoEndAt":1795805174.1315913,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":6}},"createdAt":1795776374.1315913,"device":"default","id":"06F686DB-997F-433B-8C3C-1776E53C9064","lastUpdateTimestamp":1795776374.1999836,"startedAt":1795776374.1315913,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('FB7B775D-1590-4EC1-9836-1D96B77A29D1', 'com.example.upgrade', 'default', 'Ride', 'ended', NULL, 1795790774.2949924, 0, 1795776374.2320344, 1795776374.2320344, 1795776374.2949924, '{"activityState":"ended","attributes":{"route":"ended"},"attributesType":"Ride","autoEndAt":1795805174.2320344,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":0}},"createdAt":1795776374.2320344,"device":"default","dismissAt":1795790774.2949924,"endedAt":1795776374.2949924,"id":"FB7B775D-1590-4EC1-9836-1D96B77A29D1","lastUpdateTimestamp":1795776374.2949924,"startedAt":1795776374.2320344,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('B7A71E5C-52B9-4485-9BCC-34BF36330BEC', 'com.example.upgrade', 'phone-2', 'Ride', 'dismissed', NULL, NULL, 0, 1795776374.3233852, 1795776374.3233852, 1795776374.3645873, '{"activityState":"dismissed","attributes":{"route":"dismissed"},"attributesType":"Ride","autoEndAt":1795805174.3233852,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776374.3233852,"device":"phone-2","dismissAt":1795776374.3645873,"dismissedAt":1795776374.3645873,"endedAt":1795776374.3645873,"id":"B7A71E5C-52B9-4485-9BCC-34BF36330BEC","startedAt":1795776374.3233852,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('DFC92BCE-4120-4E15-AF77-E4E7F512A4CF', 'com.example.upgrade', 'default', 'Ride', 'active', 'order-7', 1795805174.3957992, 0, 1795776374.3957992, 1795776374.3957992, 1795776374.4427364, '{"activityState":"active","attributes":{"route":"key"},"attributesType":"Ride","autoEndAt":1795805174.3957992,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":2}},"createdAt":1795776374.3957992,"device":"default","id":"DFC92BCE-4120-4E15-AF77-E4E7F512A4CF","key":"order-7","lastUpdateTimestamp":1795776374.4427364,"startedAt":1795776374.3957992,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('A404658D-2C25-4BA6-A5D8-9F8D9C555F6B', 'com.example.upgrade', 'default', 'Ride', 'active', NULL, 1795805174.4863834, 0, 1795776374.4863834, 1795776374.4863834, 1795776374.4863834, '{"activityState":"active","attributes":{"route":"token"},"attributesType":"Ride","autoEndAt":1795805174.4863834,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776374.4863834,"device":"default","id":"A404658D-2C25-4BA6-A5D8-9F8D9C555F6B","pushToken":"6ec00e656c3b9aa05eb78a2faee1d7c004f6cd7d484ed038d56e63d9b2960021","pushType":"token","startedAt":1795776374.4863834,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('55DD6D8E-4882-43E8-8598-6B2D8CA0FD64', 'com.example.upgrade', 'phone-2', 'Ride', 'active', NULL, 1795805174.6069207, 0, 1795776374.6069207, 1795776374.6069207, 1795776374.7200031, '{"activityState":"active","attributes":{"route":"delivered"},"attributesType":"Ride","autoEndAt":1795805174.6069207,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":7}},"createdAt":1795776374.6069207,"device":"phone-2","id":"55DD6D8E-4882-43E8-8598-6B2D8CA0FD64","lastUpdateTimestamp":1795776374.7200031,"startedAt":1795776374.6069207,"style":"standard"}', NULL, DEFAULT);


--
-- Data for Name: activitytype; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: apikey; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.apikey VALUES ('76c0318c4f71ea969c0e68528aae7b563b2862f54224aad3e4c71ae37684e036', NULL, NULL, 1795776373.5444047);
INSERT INTO public.apikey VALUES ('bbd9256df756dc1cf8501f36e135adde3c653924e188cfd90b02ea1a837be5b0', 'com.example.upgrade', NULL, 1795776374.0734086);


--
-- Data for Name: app; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.app VALUES ('com.example.upgrade', 'Upgrade', 1795776374.073143, false, false);


--
-- Data for Name: appsettings; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: channel; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.channel VALUES ('GTyinUtQyzFW73I3RiBeiA==', 'com.example.upgrade', 1, 1795776374.5340443, NULL, NULL, NULL, NULL);


--
-- Data for Name: delivery; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.delivery VALUES (1, 'activity:55DD6D8E-4882-43E8-8598-6B2D8CA0FD64', '55DD6D8E-4882-43E8-8598-6B2D8CA0FD64', 'com.example.upgrade', 'phone-2', NULL, 'start', '{"aps":{"alert":{"body":"","title":"Upgrade"},"attributes":{"islet":"55DD6D8E-4882-43E8-8598-6B2D8CA0FD64","route":"delivered"},"attributes-type":"Ride","content-state":{"eta":10},"event":"start","input-push-token":1,"timestamp":1795776374}}', true, 1795805174.6069207, 'sending', 1, 1795776374.6069207, 1795776434.651207, 1795776374.6069207, NULL, '680ccbd0-5173-4cd8-b972-4906e3faef98');
INSERT INTO public.delivery VALUES (2, 'activity:55DD6D8E-4882-43E8-8598-6B2D8CA0FD64', '55DD6D8E-4882-43E8-8598-6B2D8CA0FD64', 'com.example.upgrade', 'phone-2', NULL, 'update', '{"aps":{"content-state":{"eta":7},"event":"update","timestamp":1795776374}}', false, 1795805174.7200031, 'pending', 0, 1795776374.7200031, NULL, 1795776374.7200031, NULL, 'fc81f0a7-28db-493b-9e8f-cf0efea5c4e7');


--
-- Data for Name: deliverycredential; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.deliverycredential VALUES ('com.example.upgrade', 'development', 'TEAM123456', 'KEY7654321', '-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg8/oLA5+f60ZnwcyX
UvN9vUfZ44zM4FENVOLJAhgDVTChRANCAATC1dNQud2x0DDrnvtGAJ4AiyckUYf6
6FABz4PwFMbRJ+MK+/mmLbrh5p7wQpk70hNORfbVlv1AnJnWRBaG1wtg
-----END PRIVATE KEY-----
', 'https://127.0.0.1:9', NULL, 1795776374.5559187, NULL);


--
-- Data for Name: device; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.device VALUES ('default', 'Default', 1795776373.5293212);
INSERT INTO public.device VALUES ('phone-2', 'Second phone', 1795776374.102965);


--
-- Data for Name: event; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.event VALUES (1, 1795776374.1315913, 'started', 'com.example.upgrade', 'default', '06F686DB-997F-433B-8C3C-1776E53C9064', '{"activityState":"active","attributes":{"route":"active"},"attributesType":"Ride","autoEndAt":1795805174.1315913,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776374.1315913,"device":"default","id":"06F686DB-997F-433B-8C3C-1776E53C9064","startedAt":1795776374.1315913,"style":"standard"}');
INSERT INTO public.event VALUES (2, 1795776374.165095, 'contentUpdated', 'com.example.upgrade', 'default', '06F686DB-997F-433B-8C3C-1776E53C9064', '{"content":{"relevanceScore":0,"state":{"eta":8}},"timestamp":1795776374.165095}');
INSERT INTO public.event VALUES (3, 1795776374.1999836, 'contentUpdated', 'com.example.upgrade', 'default', '06F686DB-997F-433B-8C3C-1776E53C9064', '{"content":{"relevanceScore":0,"state":{"eta":6}},"timestamp":1795776374.1999836}');
INSERT INTO public.event VALUES (4, 1795776374.1999836, 'alert', 'com.example.upgrade', 'default', '06F686DB-997F-433B-8C3C-1776E53C9064', '{"body":"6 minutes","title":"Closer"}');
INSERT INTO public.event VALUES (5, 1795776374.2320344, 'started', 'com.example.upgrade', 'default', 'FB7B775D-1590-4EC1-9836-1D96B77A29D1', '{"activityState":"active","attributes":{"route":"ended"},"attributesType":"Ride","autoEndAt":1795805174.2320344,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776374.2320344,"device":"default","id":"FB7B775D-1590-4EC1-9836-1D96B77A29D1","startedAt":1795776374.2320344,"style":"standard"}');
INSERT INTO public.event VALUES (6, 1795776374.266761, 'contentUpdated', 'com.example.upgrade', 'default', 'FB7B775D-1590-4EC1-9836-1D96B77A29D1', '{"content":{"relevanceScore":0,"state":{"eta":4}},"timestamp":1795776374.266761}');
INSERT INTO public.event VALUES (7, 1795776374.2949924, 'contentUpdated', 'com.example.upgrade', 'default', 'FB7B775D-1590-4EC1-9836-1D96B77A29D1', '{"content":{"relevanceScore":0,"state":{"eta":0}},"timestamp":1795776374.2949924}');
INSERT INTO public.event VALUES (8, 1795776374.2949924, 'stateChanged', 'com.example.upgrade', 'default', 'FB7B775D-1590-4EC1-9836-1D96B77A29D1', '{"at":1795776374.2949924,"from":"active","reason":"endedByApp","to":"ended"}');
INSERT INTO public.event VALUES (9, 1795776374.3233852, 'started', 'com.example.upgrade', 'phone-2', 'B7A71E5C-52B9-4485-9BCC-34BF36330BEC', '{"activityState":"active","attributes":{"route":"dismissed"},"attributesType":"Ride","autoEndAt":1795805174.3233852,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776374.3233852,"device":"phone-2","id":"B7A71E5C-52B9-4485-9BCC-34BF36330BEC","startedAt":1795776374.3233852,"style":"standard"}');
INSERT INTO public.event VALUES (10, 1795776374.3645873, 'stateChanged', 'com.example.upgrade', 'phone-2', 'B7A71E5C-52B9-4485-9BCC-34BF36330BEC', '{"at":1795776374.3645873,"from":"active","reason":"endedByApp","to":"ended"}');
INSERT INTO public.event VALUES (11, 1795776374.3645873, 'stateChanged', 'com.example.upgrade', 'phone-2', 'B7A71E5C-52B9-4485-9BCC-34BF36330BEC', '{"at":1795776374.3645873,"from":"ended","reason":"dismissalPolicy","to":"dismissed"}');
INSERT INTO public.event VALUES (12, 1795776374.3957992, 'started', 'com.example.upgrade', 'default', 'DFC92BCE-4120-4E15-AF77-E4E7F512A4CF', '{"activityState":"active","attributes":{"route":"key"},"attributesType":"Ride","autoEndAt":1795805174.3957992,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":3}},"createdAt":1795776374.3957992,"device":"default","id":"DFC92BCE-4120-4E15-AF77-E4E7F512A4CF","key":"order-7","startedAt":1795776374.3957992,"style":"standard"}');
INSERT INTO public.event VALUES (13, 1795776374.4427364, 'contentUpdated', 'com.example.upgrade', 'default', 'DFC92BCE-4120-4E15-AF77-E4E7F512A4CF', '{"content":{"relevanceScore":0,"state":{"eta":2}},"timestamp":1795776374.4427364}');
INSERT INTO public.event VALUES (14, 1795776374.4863834, 'started', 'com.example.upgrade', 'default', 'A404658D-2C25-4BA6-A5D8-9F8D9C555F6B', '{"activityState":"active","attributes":{"route":"token"},"attributesType":"Ride","autoEndAt":1795805174.4863834,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776374.4863834,"device":"default","id":"A404658D-2C25-4BA6-A5D8-9F8D9C555F6B","pushToken":"6ec00e656c3b9aa05eb78a2faee1d7c004f6cd7d484ed038d56e63d9b2960021","pushType":"token","startedAt":1795776374.4863834,"style":"standard"}');
INSERT INTO public.event VALUES (15, 1795776374.4863834, 'pushTokenUpdated', 'com.example.upgrade', 'default', 'A404658D-2C25-4BA6-A5D8-9F8D9C555F6B', '{"kind":"activity","pushToken":"6ec00e656c3b9aa05eb78a2faee1d7c004f6cd7d484ed038d56e63d9b2960021"}');
INSERT INTO public.event VALUES (16, 1795776374.6069207, 'started', 'com.example.upgrade', 'phone-2', '55DD6D8E-4882-43E8-8598-6B2D8CA0FD64', '{"activityState":"active","attributes":{"route":"delivered"},"attributesType":"Ride","autoEndAt":1795805174.6069207,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795776374.6069207,"device":"phone-2","id":"55DD6D8E-4882-43E8-8598-6B2D8CA0FD64","startedAt":1795776374.6069207,"style":"standard"}');
INSERT INTO public.event VALUES (17, 1795776374.6069207, 'delivery', 'com.example.upgrade', 'phone-2', '55DD6D8E-4882-43E8-8598-6B2D8CA0FD64', '{"attempt":0,"delivery":1,"event":"start","note":"push-to-start to abababab…abababab (development); an alert supplied (\"Upgrade\"): a push-to-start needs one","outcome":"queued"}');
INSERT INTO public.event VALUES (18, 1795776374.7200031, 'contentUpdated', 'com.example.upgrade', 'phone-2', '55DD6D8E-4882-43E8-8598-6B2D8CA0FD64', '{"content":{"relevanceScore":0,"state":{"eta":7}},"timestamp":1795776374.7200031}');
INSERT INTO public.event VALUES (19, 1795776374.7200031, 'delivery', 'com.example.upgrade', 'phone-2', '55DD6D8E-4882-43E8-8598-6B2D8CA0FD64', '{"attempt":0,"delivery":2,"event":"update","outcome":"queued"}');


--
-- Data for Name: islet_migration; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.islet_migration VALUES (1, 'the tables of SQLite''s v10, events numbered at commit', '2026-11-27 10:46:13.040789+00');
INSERT INTO public.islet_migration VALUES (2, 'activities listed page by page in relevance order', '2026-11-27 10:46:13.343002+00');
INSERT INTO public.islet_migration VALUES (3, 'an app''s delivery paused', '2026-11-27 10:46:13.415079+00');


--
-- Data for Name: layout; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: phoneactivity; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.phoneactivity VALUES ('55DD6D8E-4882-43E8-8598-6B2D8CA0FD64', 'com.example.upgrade', 'phone-2', 'development', NULL, 'active', '');


--
-- Data for Name: phonetoken; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.phonetoken VALUES ('abababababababababababababababababababababababababababababababab', 'pushToStart', 'com.example.upgrade', 'phone-2', 'Ride', NULL, 'development', 1795776374.5724843, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.phonetoken VALUES ('cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd', 'update', 'com.example.upgrade', 'phone-2', NULL, '55DD6D8E-4882-43E8-8598-6B2D8CA0FD64', 'development', 1795776374.6636128, NULL, NULL, NULL, NULL, NULL, NULL);


--
-- Data for Name: providerkey; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.providerkey VALUES ('KEY1234567', 'TEAM123456', 'com.example.upgrade', '-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE/X7M8NENs09OmZzHgtDatPQDGMku
w68fgYMySZgNSIBU77a8Ib6H2kmCjqi0/gEGYJtD4N5DPl9GD9uzs8pfhA==
-----END PUBLIC KEY-----
', 1795776374.5157738);


--
-- Data for Name: pushtoken; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.pushtoken VALUES ('7de01e9b9bf40c05d69a57d9720965693c634b303e79f8e51d6f4f0d0c86078f', 'pushToStart', NULL, 'default', 'com.example.upgrade', 1795776374.0734086, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('b104ecdab1effa60553cb72b2f04cbcc8e1d905c5db94d6c48d80b15f78becf2', 'pushToStart', NULL, 'phone-2', 'com.example.upgrade', 1795776374.1029902, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('6ec00e656c3b9aa05eb78a2faee1d7c004f6cd7d484ed038d56e63d9b2960021', 'activity', 'A404658D-2C25-4BA6-A5D8-9F8D9C555F6B', 'default', 'com.example.upgrade', 1795776374.4863834, NULL, NULL);


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


