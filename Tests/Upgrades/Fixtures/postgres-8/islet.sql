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

INSERT INTO public.activity VALUES ('B5AD793E-6B4E-4FCF-9EC7-6EED3C534EDC', 'com.example.upgrade', 'default', 'Ride', 'active', NULL, 1795912638.9752707, 0, 1795883838.9752707, 1795883838.9752707, 1795883839.0119257, '{"activityState":"active","attributes":{"route":"active"},"attributesType":"Ride","autoEndAt":1795912638.9752707,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":6}},"createdAt":1795883838.9752707,"device":"default","id":"B5AD793E-6B4E-4FCF-9EC7-6EED3C534EDC","lastUpdateTimestamp":1795883839.0119257,"startedAt":1795883838.9752707,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('0EBEF998-E69F-48B9-A08A-1CE331D18953', 'com.example.upgrade', 'default', 'Ride', 'ended', NULL, 1795898239.0488467, 0, 1795883839.0216455, 1795883839.0216455, 1795883839.0488467, '{"activityState":"ended","attributes":{"route":"ended"},"attributesType":"Ride","autoEndAt":1795912639.0216455,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":0}},"createdAt":1795883839.0216455,"device":"default","dismissAt":1795898239.0488467,"endedAt":1795883839.0488467,"id":"0EBEF998-E69F-48B9-A08A-1CE331D18953","lastUpdateTimestamp":1795883839.0488467,"startedAt":1795883839.0216455,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('5F787B24-1D86-4DAD-820E-9C7A6132962A', 'com.example.upgrade', 'phone-2', 'Ride', 'dismissed', NULL, NULL, 0, 1795883839.059205, 1795883839.059205, 1795883839.0802302, '{"activityState":"dismissed","attributes":{"route":"dismissed"},"attributesType":"Ride","autoEndAt":1795912639.059205,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795883839.059205,"device":"phone-2","dismissAt":1795883839.0802302,"dismissedAt":1795883839.0802302,"endedAt":1795883839.0802302,"id":"5F787B24-1D86-4DAD-820E-9C7A6132962A","startedAt":1795883839.059205,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('4E825622-D1E8-420C-ADD5-4C471C3499D8', 'com.example.upgrade', 'default', 'Ride', 'active', 'order-7', 1795912639.0919409, 0, 1795883839.0919409, 1795883839.0919409, 1795883839.1138506, '{"activityState":"active","attributes":{"route":"key"},"attributesType":"Ride","autoEndAt":1795912639.0919409,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":2}},"createdAt":1795883839.0919409,"device":"default","id":"4E825622-D1E8-420C-ADD5-4C471C3499D8","key":"order-7","lastUpdateTimestamp":1795883839.1138506,"startedAt":1795883839.0919409,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('2E6D6054-5B08-4A71-9036-3B004CC04213', 'com.example.upgrade', 'default', 'Ride', 'active', NULL, 1795912639.1276126, 0, 1795883839.1276126, 1795883839.1276126, 1795883839.1276126, '{"activityState":"active","attributes":{"route":"token"},"attributesType":"Ride","autoEndAt":1795912639.1276126,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795883839.1276126,"device":"default","id":"2E6D6054-5B08-4A71-9036-3B004CC04213","pushToken":"2b63d0b5c4b1cd2513237de64c107580dbede9ab10de2993691fee849fd1c28e","pushType":"token","startedAt":1795883839.1276126,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('6E820613-73B8-496C-95C0-C93E55529FDD', 'com.example.upgrade', 'phone-2', 'Ride', 'active', NULL, 1795912639.2050068, 0, 1795883839.2050068, 1795883839.2050068, 1795883839.254743, '{"activityState":"active","attributes":{"route":"delivered"},"attributesType":"Ride","autoEndAt":1795912639.2050068,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":7}},"createdAt":1795883839.2050068,"device":"phone-2","id":"6E820613-73B8-496C-95C0-C93E55529FDD","lastUpdateTimestamp":1795883839.254743,"startedAt":1795883839.2050068,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('FD85E29B-9152-4290-892D-0D297C821828', 'com.example.upgrade', 'android-1', 'Ride', 'active', NULL, 1795912639.7431087, 0, 1795883839.7431087, 1795883839.7431087, 1795883839.7745843, '{"activityState":"active","attributes":{"route":"android"},"attributesType":"Ride","autoEndAt":1795912639.7431087,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":5}},"createdAt":1795883839.7431087,"device":"android-1","id":"FD85E29B-9152-4290-892D-0D297C821828","lastUpdateTimestamp":1795883839.7745843,"startedAt":1795883839.7431087,"style":"standard"}', NULL, DEFAULT);


--
-- Data for Name: activitytype; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: androidnotification; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: apikey; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.apikey VALUES ('326f916c498acea2eb373cc9af81b5390a3d573722d5dbcf5cde7ddc1d2aa012', NULL, NULL, 1795883838.6712637);
INSERT INTO public.apikey VALUES ('ea9633012bb0fd664001bd2c22b6d6d367965fcf557cb50b69d8b49d10823f2f', 'com.example.upgrade', NULL, 1795883838.94835);


--
-- Data for Name: app; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.app VALUES ('com.example.upgrade', 'Upgrade', 1795883838.9479878, false, false);


--
-- Data for Name: appsettings; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: channel; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.channel VALUES ('Z4ctu6ntZpFT7CmoWIsi6A==', 'com.example.upgrade', 1, 1795883839.164611, NULL, NULL, NULL, NULL);


--
-- Data for Name: delivery; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.delivery VALUES (2, 'activity:6E820613-73B8-496C-95C0-C93E55529FDD', '6E820613-73B8-496C-95C0-C93E55529FDD', 'com.example.upgrade', 'phone-2', NULL, 'update', '{"aps":{"content-state":{"eta":7},"event":"update","timestamp":1795883839}}', false, 1795912639.254743, 'pending', 0, 1795883839.254743, NULL, 1795883839.254743, NULL, 'e3a0b26b-bb65-4700-8a4f-c533b4d5f172', NULL);
INSERT INTO public.delivery VALUES (3, 'activity:FD85E29B-9152-4290-892D-0D297C821828', 'FD85E29B-9152-4290-892D-0D297C821828', 'com.example.upgrade', 'android-1', NULL, 'start', '{"activityId":"FD85E29B-9152-4290-892D-0D297C821828","attributes":{"route":"android"},"attributesType":"Ride","bundleId":"com.example.upgrade","contentState":{"eta":10},"event":"start","notification":{"text":"Eta 10","title":"Ride"},"timestamp":1795883839}', true, 1795912639.7431087, 'sending', 1, 1795883839.7431087, 1795883899.7712889, 1795883839.7431087, NULL, '750040e8-a2ee-4b78-9a01-c67c4aaf375d', NULL);
INSERT INTO public.delivery VALUES (4, 'activity:FD85E29B-9152-4290-892D-0D297C821828', 'FD85E29B-9152-4290-892D-0D297C821828', 'com.example.upgrade', 'android-1', NULL, 'update', '{"activityId":"FD85E29B-9152-4290-892D-0D297C821828","attributes":{"route":"android"},"attributesType":"Ride","bundleId":"com.example.upgrade","contentState":{"eta":5},"event":"update","notification":{"text":"Eta 5","title":"Ride"},"timestamp":1795883839}', false, 1795912639.7745843, 'pending', 0, 1795883839.7745843, NULL, 1795883839.7745843, NULL, '4391890e-058c-4446-8fdf-880b3ea2aaf6', NULL);
INSERT INTO public.delivery VALUES (1, 'activity:6E820613-73B8-496C-95C0-C93E55529FDD', '6E820613-73B8-496C-95C0-C93E55529FDD', 'com.example.upgrade', 'phone-2', NULL, 'start', '{"aps":{"alert":{"body":"","title":"Upgrade"},"attributes":{"islet":"6E820613-73B8-496C-95C0-C93E55529FDD","route":"delivered"},"attributes-type":"Ride","content-state":{"eta":10},"event":"start","input-push-token":1,"timestamp":1795883839}}', true, 1795912639.2050068, 'pending', 3, 1795883844.97723, NULL, 1795883839.2050068, NULL, '46cac88b-297c-41d0-a709-2f0fdcea8c9d', NULL);


--
-- Data for Name: deliverycredential; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.deliverycredential VALUES ('com.example.upgrade', 'development', 'TEAM123456', 'KEY7654321', '-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg8N+wusvvl93B7y7w
UjUIpgoOW5ReJ8qsOFznZawht+ChRANCAAQNxqDU1dfB0FVkZiEpdBM6YbvOZzK1
j3PmB9RaMy8sPy6iFKeeRwai1k6cgw53lRscuOsJSZ4Gq0xanQuY2wAN
-----END PRIVATE KEY-----
', 'https://127.0.0.1:9', NULL, 1795883839.175204, NULL);


--
-- Data for Name: device; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.device VALUES ('default', 'Default', 1795883838.641292, 'ios');
INSERT INTO public.device VALUES ('phone-2', 'Second phone', 1795883838.963921, 'ios');
INSERT INTO public.device VALUES ('android-1', 'Pixel', 1795883839.70889, 'android');


--
-- Data for Name: event; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.event VALUES (1, 1795883838.9752707, 'started', 'com.example.upgrade', 'default', 'B5AD793E-6B4E-4FCF-9EC7-6EED3C534EDC', '{"activityState":"active","attributes":{"route":"active"},"attributesType":"Ride","autoEndAt":1795912638.9752707,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795883838.9752707,"device":"default","id":"B5AD793E-6B4E-4FCF-9EC7-6EED3C534EDC","startedAt":1795883838.9752707,"style":"standard"}');
INSERT INTO public.event VALUES (2, 1795883838.9997063, 'contentUpdated', 'com.example.upgrade', 'default', 'B5AD793E-6B4E-4FCF-9EC7-6EED3C534EDC', '{"content":{"relevanceScore":0,"state":{"eta":8}},"timestamp":1795883838.9997063}');
INSERT INTO public.event VALUES (3, 1795883839.0119257, 'contentUpdated', 'com.example.upgrade', 'default', 'B5AD793E-6B4E-4FCF-9EC7-6EED3C534EDC', '{"content":{"relevanceScore":0,"state":{"eta":6}},"timestamp":1795883839.0119257}');
INSERT INTO public.event VALUES (4, 1795883839.0119257, 'alert', 'com.example.upgrade', 'default', 'B5AD793E-6B4E-4FCF-9EC7-6EED3C534EDC', '{"body":"6 minutes","title":"Closer"}');
INSERT INTO public.event VALUES (5, 1795883839.0216455, 'started', 'com.example.upgrade', 'default', '0EBEF998-E69F-48B9-A08A-1CE331D18953', '{"activityState":"active","attributes":{"route":"ended"},"attributesType":"Ride","autoEndAt":1795912639.0216455,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795883839.0216455,"device":"default","id":"0EBEF998-E69F-48B9-A08A-1CE331D18953","startedAt":1795883839.0216455,"style":"standard"}');
INSERT INTO public.event VALUES (6, 1795883839.038135, 'contentUpdated', 'com.example.upgrade', 'default', '0EBEF998-E69F-48B9-A08A-1CE331D18953', '{"content":{"relevanceScore":0,"state":{"eta":4}},"timestamp":1795883839.038135}');
INSERT INTO public.event VALUES (7, 1795883839.0488467, 'contentUpdated', 'com.example.upgrade', 'default', '0EBEF998-E69F-48B9-A08A-1CE331D18953', '{"content":{"relevanceScore":0,"state":{"eta":0}},"timestamp":1795883839.0488467}');
INSERT INTO public.event VALUES (8, 1795883839.0488467, 'stateChanged', 'com.example.upgrade', 'default', '0EBEF998-E69F-48B9-A08A-1CE331D18953', '{"at":1795883839.0488467,"from":"active","reason":"endedByApp","to":"ended"}');
INSERT INTO public.event VALUES (9, 1795883839.059205, 'started', 'com.example.upgrade', 'phone-2', '5F787B24-1D86-4DAD-820E-9C7A6132962A', '{"activityState":"active","attributes":{"route":"dismissed"},"attributesType":"Ride","autoEndAt":1795912639.059205,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795883839.059205,"device":"phone-2","id":"5F787B24-1D86-4DAD-820E-9C7A6132962A","startedAt":1795883839.059205,"style":"standard"}');
INSERT INTO public.event VALUES (10, 1795883839.0802302, 'stateChanged', 'com.example.upgrade', 'phone-2', '5F787B24-1D86-4DAD-820E-9C7A6132962A', '{"at":1795883839.0802302,"from":"active","reason":"endedByApp","to":"ended"}');
INSERT INTO public.event VALUES (11, 1795883839.0802302, 'stateChanged', 'com.example.upgrade', 'phone-2', '5F787B24-1D86-4DAD-820E-9C7A6132962A', '{"at":1795883839.0802302,"from":"ended","reason":"dismissalPolicy","to":"dismissed"}');
INSERT INTO public.event VALUES (12, 1795883839.0919409, 'started', 'com.example.upgrade', 'default', '4E825622-D1E8-420C-ADD5-4C471C3499D8', '{"activityState":"active","attributes":{"route":"key"},"attributesType":"Ride","autoEndAt":1795912639.0919409,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":3}},"createdAt":1795883839.0919409,"device":"default","id":"4E825622-D1E8-420C-ADD5-4C471C3499D8","key":"order-7","startedAt":1795883839.0919409,"style":"standard"}');
INSERT INTO public.event VALUES (13, 1795883839.1138506, 'contentUpdated', 'com.example.upgrade', 'default', '4E825622-D1E8-420C-ADD5-4C471C3499D8', '{"content":{"relevanceScore":0,"state":{"eta":2}},"timestamp":1795883839.1138506}');
INSERT INTO public.event VALUES (14, 1795883839.1276126, 'started', 'com.example.upgrade', 'default', '2E6D6054-5B08-4A71-9036-3B004CC04213', '{"activityState":"active","attributes":{"route":"token"},"attributesType":"Ride","autoEndAt":1795912639.1276126,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795883839.1276126,"device":"default","id":"2E6D6054-5B08-4A71-9036-3B004CC04213","pushToken":"2b63d0b5c4b1cd2513237de64c107580dbede9ab10de2993691fee849fd1c28e","pushType":"token","startedAt":1795883839.1276126,"style":"standard"}');
INSERT INTO public.event VALUES (15, 1795883839.1276126, 'pushTokenUpdated', 'com.example.upgrade', 'default', '2E6D6054-5B08-4A71-9036-3B004CC04213', '{"kind":"activity","pushToken":"2b63d0b5c4b1cd2513237de64c107580dbede9ab10de2993691fee849fd1c28e"}');
INSERT INTO public.event VALUES (16, 1795883839.2050068, 'started', 'com.example.upgrade', 'phone-2', '6E820613-73B8-496C-95C0-C93E55529FDD', '{"activityState":"active","attributes":{"route":"delivered"},"attributesType":"Ride","autoEndAt":1795912639.2050068,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795883839.2050068,"device":"phone-2","id":"6E820613-73B8-496C-95C0-C93E55529FDD","startedAt":1795883839.2050068,"style":"standard"}');
INSERT INTO public.event VALUES (17, 1795883839.2050068, 'delivery', 'com.example.upgrade', 'phone-2', '6E820613-73B8-496C-95C0-C93E55529FDD', '{"attempt":0,"delivery":1,"event":"start","note":"push-to-start to abababab…abababab (development); an alert supplied (\"Upgrade\"): a push-to-start needs one","outcome":"queued"}');
INSERT INTO public.event VALUES (18, 1795883839.254743, 'contentUpdated', 'com.example.upgrade', 'phone-2', '6E820613-73B8-496C-95C0-C93E55529FDD', '{"content":{"relevanceScore":0,"state":{"eta":7}},"timestamp":1795883839.254743}');
INSERT INTO public.event VALUES (19, 1795883839.254743, 'delivery', 'com.example.upgrade', 'phone-2', '6E820613-73B8-496C-95C0-C93E55529FDD', '{"attempt":0,"delivery":2,"event":"update","outcome":"queued"}');
INSERT INTO public.event VALUES (20, 1795883839.2955248, 'delivery', 'com.example.upgrade', 'phone-2', '6E820613-73B8-496C-95C0-C93E55529FDD', '{"apnsId":"46cac88b-297c-41d0-a709-2f0fdcea8c9d","attempt":1,"delivery":1,"environment":"development","event":"start","latencyMs":49.336901,"nextAttemptAt":1795883839.9965718,"note":"no connection: Connection errors: SingleConnectionFailure(target: [IPv4]127.0.0.1/127.0.0.1:9, error: connection reset (error set): Connection refused) (errno: 111))","outcome":"retrying","priority":10,"priorityReason":"a start (push-to-start has its own budget on the phone)","target":"abababab…abababab"}');
INSERT INTO public.event VALUES (21, 1795883839.7431087, 'started', 'com.example.upgrade', 'android-1', 'FD85E29B-9152-4290-892D-0D297C821828', '{"activityState":"active","attributes":{"route":"android"},"attributesType":"Ride","autoEndAt":1795912639.7431087,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795883839.7431087,"device":"android-1","id":"FD85E29B-9152-4290-892D-0D297C821828","startedAt":1795883839.7431087,"style":"standard"}');
INSERT INTO public.event VALUES (22, 1795883839.7431087, 'delivery', 'com.example.upgrade', 'android-1', 'FD85E29B-9152-4290-892D-0D297C821828', '{"attempt":0,"delivery":3,"event":"start","note":"to Android phone fcm-eeee…eeeeeeee through FCM","outcome":"queued"}');
INSERT INTO public.event VALUES (23, 1795883839.7745843, 'contentUpdated', 'com.example.upgrade', 'android-1', 'FD85E29B-9152-4290-892D-0D297C821828', '{"content":{"relevanceScore":0,"state":{"eta":5}},"timestamp":1795883839.7745843}');
INSERT INTO public.event VALUES (24, 1795883839.7745843, 'delivery', 'com.example.upgrade', 'android-1', 'FD85E29B-9152-4290-892D-0D297C821828', '{"attempt":0,"delivery":4,"event":"update","outcome":"queued"}');
INSERT INTO public.event VALUES (25, 1795883840.013136, 'delivery', 'com.example.upgrade', 'phone-2', '6E820613-73B8-496C-95C0-C93E55529FDD', '{"apnsId":"46cac88b-297c-41d0-a709-2f0fdcea8c9d","attempt":2,"delivery":1,"environment":"development","event":"start","latencyMs":1.863618,"nextAttemptAt":1795883841.505815,"note":"no connection: Connection errors: SingleConnectionFailure(target: [IPv4]127.0.0.1/127.0.0.1:9, error: connection reset (error set): Connection refused) (errno: 111))","outcome":"retrying","priority":10,"priorityReason":"a start (push-to-start has its own budget on the phone)","target":"abababab…abababab"}');
INSERT INTO public.event VALUES (26, 1795883841.5248375, 'delivery', 'com.example.upgrade', 'phone-2', '6E820613-73B8-496C-95C0-C93E55529FDD', '{"apnsId":"46cac88b-297c-41d0-a709-2f0fdcea8c9d","attempt":3,"delivery":1,"environment":"development","event":"start","latencyMs":1.81333,"nextAttemptAt":1795883844.97723,"note":"no connection: Connection errors: SingleConnectionFailure(target: [IPv4]127.0.0.1/127.0.0.1:9, error: connection reset (error set): Connection refused) (errno: 111))","outcome":"retrying","priority":10,"priorityReason":"a start (push-to-start has its own budget on the phone)","target":"abababab…abababab"}');


--
-- Data for Name: fcmaccesstoken; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: fcmcredential; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.fcmcredential VALUES ('com.example.upgrade', 'islet-upgrade', 'firebase-adminsdk-tfqhs@islet-upgrade.iam.gserviceaccount.com', '7f109481c425a82ff3c23ee0ee299da1b99edc4d', 'https://127.0.0.1:60217/token', '{"auth_provider_x509_cert_url":"https://www.googleapis.com/oauth2/v1/certs","auth_uri":"https://accounts.google.com/o/oauth2/auth","client_email":"firebase-adminsdk-tfqhs@islet-upgrade.iam.gserviceaccount.com","client_id":"114784975248200984232","client_x509_cert_url":"https://www.googleapis.com/robot/v1/metadata/x509/firebase%2Dadminsdk%2Dtfqhs%40islet%2Dupgrade%2Eiam%2Egserviceaccount%2Ecom","private_key":"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDh22KwLiqymoZm\n/4Xy0DlkZLDlCWP5A1unbaRFHJFaOXHomqhFGvdX82Qb1FVvf6smpjXAz+PoWwjZ\nwsbQ7yLsVNUiSzsICXE9oA3fPVL38HHXCgscqXfyzAH5XRd75afupdIDy9EO/muT\natXi68nUgJP8JQz3dcdPR93ZZM/viYq4RmPtloEZ6xeH2qKADJLXWXbTC28q5/mX\nw+rgbKDG0gMv2hr0HzKOozp00W+OVlQiw7qwOVcEAj4+Qew/8MTVoT5BAL3pUiGn\n9Oo+NMW9P5ZYi/3608UxRXEfzCUpdTaGmOxzGd+iuZzJ3ywWTkyoxsb3OP+k6Su3\nq5O+gDW/AgMBAAECggEAYDQuK8RmfJBUmo/R8xUdtTUsokqnMlzrT/xkYeniwg9B\nBWbHMTRk0ipC5JXD1IwJj5txvxDuT71jHjqYrEuIUSlrZcGsweYfvbOs5P++lQzu\nuL228P0AskOSvbCY/bXbm8w3ElXhVWUq1m7F73QnEuS35Em15bxd6te+WEjYR3u+\naPEB5jqPRcqD29xfIVywsBsU6CkULMe1eSDVm1oH16c8FW9154nHJI+ZBovXH8Zf\nbyZuIrEFaW6aUu8O3pVh7eDbQkasqFkt7UlClF0Nuf8eJfQ6h8oE7qDQoLxpbR59\nUu1wjzZAHOMEt9BakxoUwIhE1akkb/FtFrFbLQHKeQKBgQDxWaTGmOHe2ScxX+ph\nqKT7dlVpfDoMb/l54sFH+lVvtcyfPu6m2YS9raBs6DDFPakDZMm7dQWBWEQw//UJ\nWqtzu0YRlDrlqYv2mkTMkr8cwmo0dZf37REr4BgftNa5ULP6LF32o0vnqLGgqQec\nM/jZkk711a8v9D2WgXgHhnKUVwKBgQDvkP32mpXfCWG6JKdAWBUnAVBzolsQeyIg\nauVUaTyzsvQf6/QX+OCFuNwy4xDQlACkOvxkeQrjJI83KVnxPwU80xNYVadEJRIs\n9OhPP8X+POBlFPFjI5qZfpwzgMjACCrRDawbOeLt9OT9OcfYQ1C5NrrSmCegRxYp\nmVldFphI2QKBgBD0dzrsapG5N6OkVVbe/hgcTAvJClrtUt1ZLLLdxzq9zs4xIZrf\nFRAuLmL4PNTebA0s+28L3YMkrEW09YXetMTAlz+M5kZUDt0YIVUtyfc/QS7GRBLK\nuLYYXBl+HseN/9bHXyKAfkib9T6QIVS74fOG770dcd0wj1MPbVs5+rqpAoGAPO+m\nibmccZUTVKPKHyXIi5lb+23KuBB6B8DpAGWcWSEl05DTD93wTlNNP2xedI+Q8jVG\nyc+4IzrDawaLqD+dd3FBNHDlEQJU8zaAeNgB5r9ZXJzNIaiGxJBd7wPNDHuHWJGf\nu3Un8dse/AJcgPfuao4vSy4EtlIeowosnu8GYVECgYEAmu5H0b1DtKE9sj6BlZCY\nDD9m6bwFI45k3K1TSoxVB5Mto1QLG01TaH88ckYoTFT6H7HBAO7ngyvAsOGUM9vp\nrWQSip1kFp1I8UV2hWbp6LdOG+RjmjYMoXUCwIsV40o8xqrFa3CHIxtrbqW5zLs9\npbQVeRRwMMl9bHAkQ5J95qU=\n-----END PRIVATE KEY-----\n\n","private_key_id":"7f109481c425a82ff3c23ee0ee299da1b99edc4d","project_id":"islet-upgrade","token_uri":"https://127.0.0.1:60217/token","type":"service_account","universe_domain":"googleapis.com"}', 'https://127.0.0.1:9', NULL, 1795883839.6887932, NULL);


--
-- Data for Name: fcmserviceaccount; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.fcmserviceaccount VALUES ('firebase-adminsdk-tfqhs@islet-upgrade.iam.gserviceaccount.com', 'islet-upgrade', '7f109481c425a82ff3c23ee0ee299da1b99edc4d', '-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA4dtisC4qspqGZv+F8tA5
ZGSw5Qlj+QNbp22kRRyRWjlx6JqoRRr3V/NkG9RVb3+rJqY1wM/j6FsI2cLG0O8i
7FTVIks7CAlxPaAN3z1S9/Bx1woLHKl38swB+V0Xe+Wn7qXSA8vRDv5rk2rV4uvJ
1ICT/CUM93XHT0fd2WTP74mKuEZj7ZaBGesXh9qigAyS11l20wtvKuf5l8Pq4Gyg
xtIDL9oa9B8yjqM6dNFvjlZUIsO6sDlXBAI+PkHsP/DE1aE+QQC96VIhp/TqPjTF
vT+WWIv9+tPFMUVxH8wlKXU2hpjscxnformcyd8sFk5MqMbG9zj/pOkrt6uTvoA1
vwIDAQAB
-----END PUBLIC KEY-----', 1795883839.678207);


--
-- Data for Name: islet_migration; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.islet_migration VALUES (1, 'the tables of SQLite''s v10, events numbered at commit', '2026-11-28 16:37:18.448843+00');
INSERT INTO public.islet_migration VALUES (2, 'activities listed page by page in relevance order', '2026-11-28 16:37:18.508241+00');
INSERT INTO public.islet_migration VALUES (3, 'an app''s delivery paused', '2026-11-28 16:37:18.524706+00');
INSERT INTO public.islet_migration VALUES (4, 'room on activity pages for updates in place', '2026-11-28 16:37:18.533233+00');
INSERT INTO public.islet_migration VALUES (5, 'finished deliveries and an activity''s phone tokens found for the purge', '2026-11-28 16:37:18.538821+00');
INSERT INTO public.islet_migration VALUES (6, 'Android phones, FCM credentials, and Islet playing Google', '2026-11-28 16:37:18.54759+00');
INSERT INTO public.islet_migration VALUES (7, 'the push budget is each app''s on each phone', '2026-11-28 16:37:18.56595+00');
INSERT INTO public.islet_migration VALUES (8, 'a delivery keeps the trace of the change that wrote it', '2026-11-28 16:37:18.572248+00');


--
-- Data for Name: layout; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: phoneactivity; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.phoneactivity VALUES ('6E820613-73B8-496C-95C0-C93E55529FDD', 'com.example.upgrade', 'phone-2', 'development', NULL, 'active', '', 'ios');
INSERT INTO public.phoneactivity VALUES ('FD85E29B-9152-4290-892D-0D297C821828', 'com.example.upgrade', 'android-1', 'production', NULL, 'active', '', 'android');


--
-- Data for Name: phonebudget; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: phonetoken; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.phonetoken VALUES ('abababababababababababababababababababababababababababababababab', 'pushToStart', 'com.example.upgrade', 'phone-2', 'Ride', NULL, 'development', 1795883839.1907806, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.phonetoken VALUES ('cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd', 'update', 'com.example.upgrade', 'phone-2', NULL, '6E820613-73B8-496C-95C0-C93E55529FDD', 'development', 1795883839.2306461, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.phonetoken VALUES ('fcm-eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee', 'fcm', 'com.example.upgrade', 'android-1', NULL, NULL, 'production', 1795883839.7242646, NULL, NULL, NULL, NULL, NULL, NULL);


--
-- Data for Name: providerkey; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.providerkey VALUES ('KEY1234567', 'TEAM123456', 'com.example.upgrade', '-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEdEDkerKRUZFjOf1hNA0lEjhM1Yol
reTuHzI0di+htxGRlrqs4aQnrxjb7QrITtDPHaKwm/OGFtaSpqthvB5qig==
-----END PUBLIC KEY-----
', 1795883839.150423);


--
-- Data for Name: pushtoken; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.pushtoken VALUES ('017a2474a4e764d069420489b5ac1fd9dfe9b44992ee7e1e755ef81a14dc5853', 'pushToStart', NULL, 'default', 'com.example.upgrade', 1795883838.94835, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('842f778cca434f05948549f6f23b6552e3305b2c0951bef1a6cefb73c5dda839', 'pushToStart', NULL, 'phone-2', 'com.example.upgrade', 1795883838.9639564, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('2b63d0b5c4b1cd2513237de64c107580dbede9ab10de2993691fee849fd1c28e', 'activity', '2E6D6054-5B08-4A71-9036-3B004CC04213', 'default', 'com.example.upgrade', 1795883839.1276126, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('oVqMFjDh296ynONeQCsHQA:APA91bcNESuousIxFLVIGKhei1WWTqDzhkAej0w5-Ygkr_XWq0oiPmEmYhND5ROd3zR6PFDYsWA1b3uwXbNucuswvg6v-ofCdS2E8rKPez0vHZiF27WrCiY-bm5adYwbMj-7Vp2bSLog', 'fcm', NULL, 'android-1', 'com.example.upgrade', 1795883839.7089112, NULL, NULL);


--
-- Data for Name: writeprobe; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Name: delivery_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.delivery_id_seq', 4, true);


--
-- Name: event_id; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.event_id', 26, true);


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


