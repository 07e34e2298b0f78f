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
-- Name: appuser; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.appuser (
    bundleid text NOT NULL,
    externalid text NOT NULL,
    devices text NOT NULL,
    tags text NOT NULL,
    createdat double precision NOT NULL,
    updatedat double precision NOT NULL
);


--
-- Name: appuserdevice; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.appuserdevice (
    bundleid text NOT NULL,
    deviceid text NOT NULL,
    externalid text NOT NULL
);


--
-- Name: appusertag; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.appusertag (
    bundleid text NOT NULL,
    name text NOT NULL,
    value text NOT NULL,
    externalid text NOT NULL
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
-- Name: idempotencykey; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.idempotencykey (
    scope text NOT NULL,
    key text NOT NULL,
    digest text NOT NULL,
    holder text NOT NULL,
    state text NOT NULL,
    status bigint,
    contenttype text,
    body text,
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
-- Name: send; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.send (
    id text NOT NULL,
    bundleid text NOT NULL,
    status text NOT NULL,
    at double precision,
    json text NOT NULL
);


--
-- Name: sendtarget; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.sendtarget (
    sendid text NOT NULL,
    seq bigint NOT NULL,
    deviceid text NOT NULL,
    outcome text,
    activityid text,
    reason text,
    doneat double precision
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

INSERT INTO public.activity VALUES ('FF7F9D0C-644F-46B1-B493-61253635612D', 'com.example.upgrade', 'default', 'Ride', 'active', NULL, 1795970223.9184833, 0, 1795941423.9184833, 1795941423.9184833, 1795941423.9437137, '{"activityState":"active","attributes":{"route":"active"},"attributesType":"Ride","autoEndAt":1795970223.9184833,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":6}},"createdAt":1795941423.9184833,"device":"default","id":"FF7F9D0C-644F-46B1-B493-61253635612D","lastUpdateTimestamp":1795941423.9437137,"source":"api","startedAt":1795941423.9184833,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('E9D2E032-68DE-456F-9D14-389D81ED7946', 'com.example.upgrade', 'default', 'Ride', 'ended', NULL, 1795955823.9653525, 0, 1795941423.951515, 1795941423.951515, 1795941423.9653525, '{"activityState":"ended","attributes":{"route":"ended"},"attributesType":"Ride","autoEndAt":1795970223.951515,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":0}},"createdAt":1795941423.951515,"device":"default","dismissAt":1795955823.9653525,"endedAt":1795941423.9653525,"id":"E9D2E032-68DE-456F-9D14-389D81ED7946","lastUpdateTimestamp":1795941423.9653525,"source":"api","startedAt":1795941423.951515,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('00989DEF-5EB5-438E-A165-4F12090F5808', 'com.example.upgrade', 'phone-2', 'Ride', 'dismissed', NULL, NULL, 0, 1795941423.9727993, 1795941423.9727993, 1795941423.9803634, '{"activityState":"dismissed","attributes":{"route":"dismissed"},"attributesType":"Ride","autoEndAt":1795970223.9727993,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795941423.9727993,"device":"phone-2","dismissAt":1795941423.9803634,"dismissedAt":1795941423.9803634,"endedAt":1795941423.9803634,"id":"00989DEF-5EB5-438E-A165-4F12090F5808","source":"api","startedAt":1795941423.9727993,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('770916B9-098C-479D-B4D0-37B504FBED91', 'com.example.upgrade', 'default', 'Ride', 'active', 'order-7', 1795970223.9920237, 0, 1795941423.9920237, 1795941423.9920237, 1795941424.0018468, '{"activityState":"active","attributes":{"route":"key"},"attributesType":"Ride","autoEndAt":1795970223.9920237,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":2}},"createdAt":1795941423.9920237,"device":"default","id":"770916B9-098C-479D-B4D0-37B504FBED91","key":"order-7","lastUpdateTimestamp":1795941424.0018468,"source":"api","startedAt":1795941423.9920237,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('14CF6CD6-BB68-46AF-A2C3-86F8F6C60401', 'com.example.upgrade', 'default', 'Ride', 'active', NULL, 1795970224.0109606, 0, 1795941424.0109606, 1795941424.0109606, 1795941424.0109606, '{"activityState":"active","attributes":{"route":"token"},"attributesType":"Ride","autoEndAt":1795970224.0109606,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795941424.0109606,"device":"default","id":"14CF6CD6-BB68-46AF-A2C3-86F8F6C60401","pushToken":"152838d6b9ba22fcacd8aabf34f9e2ad456de64b6d90c71025dd59a05dc65da4","pushType":"token","source":"api","startedAt":1795941424.0109606,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('20486602-F568-42E0-8CDA-EC383DB193FC', 'com.example.upgrade', 'phone-2', 'Ride', 'active', NULL, 1795970224.0706942, 0, 1795941424.0706942, 1795941424.0706942, 1795941424.10924, '{"activityState":"active","attributes":{"route":"delivered"},"attributesType":"Ride","autoEndAt":1795970224.0706942,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":7}},"createdAt":1795941424.0706942,"device":"phone-2","id":"20486602-F568-42E0-8CDA-EC383DB193FC","lastUpdateTimestamp":1795941424.10924,"source":"api","startedAt":1795941424.0706942,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('DF6AE534-56F0-4C44-B4E7-1D4A18B8E099', 'com.example.upgrade', 'android-1', 'Ride', 'active', NULL, 1795970224.2539372, 0, 1795941424.2539372, 1795941424.2539372, 1795941424.2742825, '{"activityState":"active","attributes":{"route":"android"},"attributesType":"Ride","autoEndAt":1795970224.2539372,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":5}},"createdAt":1795941424.2539372,"device":"android-1","id":"DF6AE534-56F0-4C44-B4E7-1D4A18B8E099","lastUpdateTimestamp":1795941424.2742825,"source":"api","startedAt":1795941424.2539372,"style":"standard"}', NULL, DEFAULT);


--
-- Data for Name: activitytype; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: androidnotification; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: apikey; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.apikey VALUES ('9db5312b90fd532cea29d8785e45df4b77c4e73280a6d4af9fffa1933dbf9b3a', NULL, NULL, 1795941423.6182451);
INSERT INTO public.apikey VALUES ('1b55b4bee333651fdc945242bd42e6e4bc5738af44af07a564ad0a759e2101c6', 'com.example.upgrade', NULL, 1795941423.8920178);


--
-- Data for Name: app; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.app VALUES ('com.example.upgrade', 'Upgrade', 1795941423.8918152, false, false);


--
-- Data for Name: appsettings; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: appuser; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: appuserdevice; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: appusertag; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: channel; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.channel VALUES ('3X1gfrGMryYGl2jdE6nzMg==', 'com.example.upgrade', 1, 1795941424.0346184, NULL, NULL, NULL, NULL);


--
-- Data for Name: delivery; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.delivery VALUES (3, 'activity:20486602-F568-42E0-8CDA-EC383DB193FC', '20486602-F568-42E0-8CDA-EC383DB193FC', 'com.example.upgrade', 'phone-2', NULL, 'update', '{"aps":{"content-state":{"eta":7},"event":"update","timestamp":1795941424}}', false, 1795970224.10924, 'pending', 0, 1795941424.10924, NULL, 1795941424.10924, NULL, '04f41d8e-cd0c-4f63-86e6-c62f2fad7d9e', NULL);
INSERT INTO public.delivery VALUES (4, 'activity:DF6AE534-56F0-4C44-B4E7-1D4A18B8E099', 'DF6AE534-56F0-4C44-B4E7-1D4A18B8E099', 'com.example.upgrade', 'android-1', NULL, 'start', '{"activityId":"DF6AE534-56F0-4C44-B4E7-1D4A18B8E099","attributes":{"route":"android"},"attributesType":"Ride","bundleId":"com.example.upgrade","contentState":{"eta":10},"event":"start","notification":{"text":"Eta 10","title":"Ride"},"timestamp":1795941424}', true, 1795970224.2539372, 'sending', 1, 1795941424.2539372, 1795941484.2719283, 1795941424.2539372, NULL, 'abca5687-27ab-4632-b84c-7a68dce53e4a', NULL);
INSERT INTO public.delivery VALUES (6, 'activity:DF6AE534-56F0-4C44-B4E7-1D4A18B8E099', 'DF6AE534-56F0-4C44-B4E7-1D4A18B8E099', 'com.example.upgrade', 'android-1', NULL, 'update', '{"activityId":"DF6AE534-56F0-4C44-B4E7-1D4A18B8E099","attributes":{"route":"android"},"attributesType":"Ride","bundleId":"com.example.upgrade","contentState":{"eta":5},"event":"update","notification":{"text":"Eta 5","title":"Ride"},"timestamp":1795941424}', false, 1795970224.2742825, 'pending', 0, 1795941424.2742825, NULL, 1795941424.2742825, NULL, '455e29ee-05d1-44d2-a70c-36c805090477', NULL);
INSERT INTO public.delivery VALUES (1, 'activity:20486602-F568-42E0-8CDA-EC383DB193FC', '20486602-F568-42E0-8CDA-EC383DB193FC', 'com.example.upgrade', 'phone-2', NULL, 'start', '{"aps":{"alert":{"body":"","title":"Upgrade"},"attributes":{"islet":"20486602-F568-42E0-8CDA-EC383DB193FC","route":"delivered"},"attributes-type":"Ride","content-state":{"eta":10},"event":"start","input-push-token":1,"timestamp":1795941424}}', true, 1795970224.0706942, 'pending', 3, 1795941429.0023875, NULL, 1795941424.0706942, NULL, '8e195c79-d344-494e-a628-1df5ef734886', NULL);


--
-- Data for Name: deliverycredential; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.deliverycredential VALUES ('com.example.upgrade', 'development', 'TEAM123456', 'KEY7654321', '-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg8bsn7UKY9KSiknbn
y5A9I0DZnkEPPvr3jhnVMqLAYFWhRANCAAQvn1nnPSMXsn+v6zh1bS9ehVV8iw1c
hm1rz87RD+aAi40e8b8MBiMuZlpzYC79ENU/SsQ475MUysD2NnPcQv1t
-----END PRIVATE KEY-----
', 'https://127.0.0.1:9', NULL, 1795941424.0445595, NULL);


--
-- Data for Name: device; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.device VALUES ('default', 'Default', 1795941423.5844216, 'ios');
INSERT INTO public.device VALUES ('phone-2', 'Second phone', 1795941423.9017186, 'ios');
INSERT INTO public.device VALUES ('android-1', 'Pixel', 1795941424.2371533, 'android');


--
-- Data for Name: event; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.event VALUES (1, 1795941423.9184833, 'started', 'com.example.upgrade', 'default', 'FF7F9D0C-644F-46B1-B493-61253635612D', '{"activityState":"active","attributes":{"route":"active"},"attributesType":"Ride","autoEndAt":1795970223.9184833,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795941423.9184833,"device":"default","id":"FF7F9D0C-644F-46B1-B493-61253635612D","source":"api","startedAt":1795941423.9184833,"style":"standard"}');
INSERT INTO public.event VALUES (2, 1795941423.9364557, 'contentUpdated', 'com.example.upgrade', 'default', 'FF7F9D0C-644F-46B1-B493-61253635612D', '{"content":{"relevanceScore":0,"state":{"eta":8}},"timestamp":1795941423.9364557}');
INSERT INTO public.event VALUES (3, 1795941423.9437137, 'contentUpdated', 'com.example.upgrade', 'default', 'FF7F9D0C-644F-46B1-B493-61253635612D', '{"content":{"relevanceScore":0,"state":{"eta":6}},"timestamp":1795941423.9437137}');
INSERT INTO public.event VALUES (4, 1795941423.9437137, 'alert', 'com.example.upgrade', 'default', 'FF7F9D0C-644F-46B1-B493-61253635612D', '{"body":"6 minutes","title":"Closer"}');
INSERT INTO public.event VALUES (5, 1795941423.951515, 'started', 'com.example.upgrade', 'default', 'E9D2E032-68DE-456F-9D14-389D81ED7946', '{"activityState":"active","attributes":{"route":"ended"},"attributesType":"Ride","autoEndAt":1795970223.951515,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795941423.951515,"device":"default","id":"E9D2E032-68DE-456F-9D14-389D81ED7946","source":"api","startedAt":1795941423.951515,"style":"standard"}');
INSERT INTO public.event VALUES (6, 1795941423.9594626, 'contentUpdated', 'com.example.upgrade', 'default', 'E9D2E032-68DE-456F-9D14-389D81ED7946', '{"content":{"relevanceScore":0,"state":{"eta":4}},"timestamp":1795941423.9594626}');
INSERT INTO public.event VALUES (7, 1795941423.9653525, 'contentUpdated', 'com.example.upgrade', 'default', 'E9D2E032-68DE-456F-9D14-389D81ED7946', '{"content":{"relevanceScore":0,"state":{"eta":0}},"timestamp":1795941423.9653525}');
INSERT INTO public.event VALUES (8, 1795941423.9653525, 'stateChanged', 'com.example.upgrade', 'default', 'E9D2E032-68DE-456F-9D14-389D81ED7946', '{"at":1795941423.9653525,"from":"active","reason":"endedByApp","to":"ended"}');
INSERT INTO public.event VALUES (9, 1795941423.9727993, 'started', 'com.example.upgrade', 'phone-2', '00989DEF-5EB5-438E-A165-4F12090F5808', '{"activityState":"active","attributes":{"route":"dismissed"},"attributesType":"Ride","autoEndAt":1795970223.9727993,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795941423.9727993,"device":"phone-2","id":"00989DEF-5EB5-438E-A165-4F12090F5808","source":"api","startedAt":1795941423.9727993,"style":"standard"}');
INSERT INTO public.event VALUES (10, 1795941423.9803634, 'stateChanged', 'com.example.upgrade', 'phone-2', '00989DEF-5EB5-438E-A165-4F12090F5808', '{"at":1795941423.9803634,"from":"active","reason":"endedByApp","to":"ended"}');
INSERT INTO public.event VALUES (11, 1795941423.9803634, 'stateChanged', 'com.example.upgrade', 'phone-2', '00989DEF-5EB5-438E-A165-4F12090F5808', '{"at":1795941423.9803634,"from":"ended","reason":"dismissalPolicy","to":"dismissed"}');
INSERT INTO public.event VALUES (12, 1795941423.9920237, 'started', 'com.example.upgrade', 'default', '770916B9-098C-479D-B4D0-37B504FBED91', '{"activityState":"active","attributes":{"route":"key"},"attributesType":"Ride","autoEndAt":1795970223.9920237,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":3}},"createdAt":1795941423.9920237,"device":"default","id":"770916B9-098C-479D-B4D0-37B504FBED91","key":"order-7","source":"api","startedAt":1795941423.9920237,"style":"standard"}');
INSERT INTO public.event VALUES (13, 1795941424.0018468, 'contentUpdated', 'com.example.upgrade', 'default', '770916B9-098C-479D-B4D0-37B504FBED91', '{"content":{"relevanceScore":0,"state":{"eta":2}},"timestamp":1795941424.0018468}');
INSERT INTO public.event VALUES (14, 1795941424.0109606, 'started', 'com.example.upgrade', 'default', '14CF6CD6-BB68-46AF-A2C3-86F8F6C60401', '{"activityState":"active","attributes":{"route":"token"},"attributesType":"Ride","autoEndAt":1795970224.0109606,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795941424.0109606,"device":"default","id":"14CF6CD6-BB68-46AF-A2C3-86F8F6C60401","pushToken":"152838d6b9ba22fcacd8aabf34f9e2ad456de64b6d90c71025dd59a05dc65da4","pushType":"token","source":"api","startedAt":1795941424.0109606,"style":"standard"}');
INSERT INTO public.event VALUES (15, 1795941424.0109606, 'pushTokenUpdated', 'com.example.upgrade', 'default', '14CF6CD6-BB68-46AF-A2C3-86F8F6C60401', '{"kind":"activity","pushToken":"152838d6b9ba22fcacd8aabf34f9e2ad456de64b6d90c71025dd59a05dc65da4"}');
INSERT INTO public.event VALUES (16, 1795941424.0519578, 'pushTokenUpdated', 'com.example.upgrade', 'phone-2', NULL, '{"attributesType":"Ride","kind":"phonePushToStart","pushToken":"abababababababababababababababababababababababababababababababab"}');
INSERT INTO public.event VALUES (17, 1795941424.0706942, 'started', 'com.example.upgrade', 'phone-2', '20486602-F568-42E0-8CDA-EC383DB193FC', '{"activityState":"active","attributes":{"route":"delivered"},"attributesType":"Ride","autoEndAt":1795970224.0706942,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795941424.0706942,"device":"phone-2","id":"20486602-F568-42E0-8CDA-EC383DB193FC","source":"api","startedAt":1795941424.0706942,"style":"standard"}');
INSERT INTO public.event VALUES (18, 1795941424.0706942, 'delivery', 'com.example.upgrade', 'phone-2', '20486602-F568-42E0-8CDA-EC383DB193FC', '{"attempt":0,"delivery":1,"event":"start","note":"push-to-start to abababab…abababab (development); an alert supplied (\"Upgrade\"): a push-to-start needs one","outcome":"queued"}');
INSERT INTO public.event VALUES (19, 1795941424.0830102, 'pushTokenUpdated', 'com.example.upgrade', 'phone-2', '20486602-F568-42E0-8CDA-EC383DB193FC', '{"kind":"phoneUpdate","pushToken":"cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd"}');
INSERT INTO public.event VALUES (20, 1795941424.1192007, 'delivery', 'com.example.upgrade', 'phone-2', '20486602-F568-42E0-8CDA-EC383DB193FC', '{"apnsId":"8e195c79-d344-494e-a628-1df5ef734886","attempt":1,"delivery":1,"environment":"development","event":"start","latencyMs":22.018881,"nextAttemptAt":1795941424.784802,"note":"no connection: Connection errors: SingleConnectionFailure(target: [IPv4]127.0.0.1/127.0.0.1:9, error: connection reset (error set): Connection refused) (errno: 111))","outcome":"retrying","priority":10,"priorityReason":"a start (push-to-start has its own budget on the phone)","target":"abababab…abababab"}');
INSERT INTO public.event VALUES (21, 1795941424.10924, 'contentUpdated', 'com.example.upgrade', 'phone-2', '20486602-F568-42E0-8CDA-EC383DB193FC', '{"content":{"relevanceScore":0,"state":{"eta":7}},"timestamp":1795941424.10924}');
INSERT INTO public.event VALUES (22, 1795941424.10924, 'delivery', 'com.example.upgrade', 'phone-2', '20486602-F568-42E0-8CDA-EC383DB193FC', '{"attempt":0,"delivery":3,"event":"update","outcome":"queued"}');
INSERT INTO public.event VALUES (23, 1795941424.2450318, 'pushTokenUpdated', 'com.example.upgrade', 'android-1', NULL, '{"kind":"fcm","pushToken":"fcm-eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"}');
INSERT INTO public.event VALUES (24, 1795941424.2539372, 'started', 'com.example.upgrade', 'android-1', 'DF6AE534-56F0-4C44-B4E7-1D4A18B8E099', '{"activityState":"active","attributes":{"route":"android"},"attributesType":"Ride","autoEndAt":1795970224.2539372,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795941424.2539372,"device":"android-1","id":"DF6AE534-56F0-4C44-B4E7-1D4A18B8E099","source":"api","startedAt":1795941424.2539372,"style":"standard"}');
INSERT INTO public.event VALUES (25, 1795941424.2539372, 'delivery', 'com.example.upgrade', 'android-1', 'DF6AE534-56F0-4C44-B4E7-1D4A18B8E099', '{"attempt":0,"delivery":4,"event":"start","note":"to Android phone fcm-eeee…eeeeeeee through FCM","outcome":"queued"}');
INSERT INTO public.event VALUES (26, 1795941424.2742825, 'contentUpdated', 'com.example.upgrade', 'android-1', 'DF6AE534-56F0-4C44-B4E7-1D4A18B8E099', '{"content":{"relevanceScore":0,"state":{"eta":5}},"timestamp":1795941424.2742825}');
INSERT INTO public.event VALUES (27, 1795941424.2742825, 'delivery', 'com.example.upgrade', 'android-1', 'DF6AE534-56F0-4C44-B4E7-1D4A18B8E099', '{"attempt":0,"delivery":6,"event":"update","outcome":"queued"}');
INSERT INTO public.event VALUES (28, 1795941424.7988446, 'delivery', 'com.example.upgrade', 'phone-2', '20486602-F568-42E0-8CDA-EC383DB193FC', '{"apnsId":"8e195c79-d344-494e-a628-1df5ef734886","attempt":2,"delivery":1,"environment":"development","event":"start","latencyMs":3.891765,"nextAttemptAt":1795941426.2625387,"note":"no connection: Connection errors: SingleConnectionFailure(target: [IPv4]127.0.0.1/127.0.0.1:9, error: connection reset (error set): Connection refused) (errno: 111))","outcome":"retrying","priority":10,"priorityReason":"a start (push-to-start has its own budget on the phone)","target":"abababab…abababab"}');
INSERT INTO public.event VALUES (29, 1795941426.2717538, 'delivery', 'com.example.upgrade', 'phone-2', '20486602-F568-42E0-8CDA-EC383DB193FC', '{"apnsId":"8e195c79-d344-494e-a628-1df5ef734886","attempt":3,"delivery":1,"environment":"development","event":"start","latencyMs":0.970958,"nextAttemptAt":1795941429.0023875,"note":"no connection: Connection errors: SingleConnectionFailure(target: [IPv4]127.0.0.1/127.0.0.1:9, error: connection reset (error set): Connection refused) (errno: 111))","outcome":"retrying","priority":10,"priorityReason":"a start (push-to-start has its own budget on the phone)","target":"abababab…abababab"}');


--
-- Data for Name: fcmaccesstoken; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: fcmcredential; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.fcmcredential VALUES ('com.example.upgrade', 'islet-upgrade', 'firebase-adminsdk-reymu@islet-upgrade.iam.gserviceaccount.com', 'b13cdba38ab7244dfa8d5bd19f0c7e1ed9829ad1', 'https://127.0.0.1:57343/token', '{"auth_provider_x509_cert_url":"https://www.googleapis.com/oauth2/v1/certs","auth_uri":"https://accounts.google.com/o/oauth2/auth","client_email":"firebase-adminsdk-reymu@islet-upgrade.iam.gserviceaccount.com","client_id":"101926400812341693328","client_x509_cert_url":"https://www.googleapis.com/robot/v1/metadata/x509/firebase%2Dadminsdk%2Dreymu%40islet%2Dupgrade%2Eiam%2Egserviceaccount%2Ecom","private_key":"-----BEGIN PRIVATE KEY-----\nMIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQDDoZu1HVmbyW1Q\n3VEpgV7T3WQw/0BuPHIzsWfrfhmucQ1itXdhLMwJ+2uxq4TrJ4XPYPlBA5zCnmqP\n6xuZi/0uhI5prl216VIhBpSD7mEA+VsTLNU1Crkhj4TpSS5nX6EuNTQLL/HgEKq4\nS45VMl5xs386xFXSTlSxxK53p4z/tii7Tq2QEoiV92JBkFVM1p5teG0FI8FPm7Ik\nqcpdVuaMD8C3ALmItT/7K7XDR0CH1y0fbc2v6D8WmJQgP+JZCa7lknVST3Tkdsxh\n1KVyH5I7nnkrJC+TZB9Wi/CmAuT4Nv2S4yBilwogP0p9SSihFy/UpnthXKxNNFT9\nlVREfvYfAgMBAAECggEACalflprzzqfXXZkF5cuH3WV1CfPGlisnZg+AQbchRDuS\nclTip8qd68LzrKX7Pd8z0pbII0KEaXAyycIjbiU7Gc2zeDCuXB+WeMm/EqJL6Xpn\nLxPrFmAzMx8dbKVlRKG1GiJyhuLqn9Wdjisyb665z1poEYTvdXV85VKrXdQejeUL\nobMEjEG8hXJ+qwofk3mWTzrj3qrHABDFeqbLBRm2tWkXqovALSPD7TkLGNUuav3i\nhUlaqqOuKH1LSTiY7J7ax62smmHEBmLGVppcBaQzYocSU3scmtI1/DtSjWKPdwuE\nT2BYsLVdKx9o7b90o90DfTvCs2T6xvMx4zo8j5tiAQKBgQD3ywDByQrxLQltpFx9\nPkTQnPjMLzaxVqosi/HNBxwn9frB6t4bWxDfSckNyMqP5H9DBho7aiMM60nKKYkQ\n/ItmruCvS+IbApaXB8LSbgYOm1UDhijMipnkDQPtiTfqfjb2+J25p+DQcF+x6zxh\n2vbJ96p+hrNA/0hyDRAISDPVgQKBgQDKHFWnE3bk0/6pWosCYKEqSho/o1w94rW1\n1i3q/tobZ/Wxyen7fb4GcqqbLNJGo4fHQf2S5+KORggzzZg5MbHYizxtzgfQuMoO\nwCaaVQVy2na9NPodVOtIHj4hHLRy1e9PFlf06L11fwAgNClgsQJyPCrDf7qzZARk\nWy6S+KjbnwKBgDVUmqgadeFsWQAhBMrr0PG5Jw8DBllqlpuZzwPaiOPM3BhKTV1D\n30C/Z6cw1O/dNMqfEJxC/qI0LaB2Cgr+353M+4ye314C05hT0klp5qHUKprkj/ld\nxzs+1d6UztUILxo+bevcRtV1qhLn1woUj1Lum+I5aXEOwG/TgeTWbVmBAoGBAIob\naJAdpd3h2yAAhgLe4uJR9rPLvmlvdLnHnGL7OTEHDgYqMmAu4V3olxooO5wXfN21\nA0CSgea0hkBX2hAjHCMbqfRimEaRL0l7FiXZuTptfDv4an0GnSwPtmbMBaZ+9+M0\nInBxZZ1XZk+bNTckXcaPxK0IqByTWMj24dF+Z2yDAoGBALFLM4YKReB0uvSDeAhI\nXps79G/+9qpoQ7MYykiQwGEb4Zcv4OrMg8RXm/OaG8j+QhmXVv2ZhzZYMPkI8ZsW\ni02sXoF7x+f2geuQZs5J0NCUgO8erSI6dbbFqL7NDVq28emx3qAHcxIFPqEq6iZx\nsiZHpsMmm5pZcP9oUTZz67kf\n-----END PRIVATE KEY-----\n\n","private_key_id":"b13cdba38ab7244dfa8d5bd19f0c7e1ed9829ad1","project_id":"islet-upgrade","token_uri":"https://127.0.0.1:57343/token","type":"service_account","universe_domain":"googleapis.com"}', 'https://127.0.0.1:9', NULL, 1795941424.2292113, NULL);


--
-- Data for Name: fcmserviceaccount; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.fcmserviceaccount VALUES ('firebase-adminsdk-reymu@islet-upgrade.iam.gserviceaccount.com', 'islet-upgrade', 'b13cdba38ab7244dfa8d5bd19f0c7e1ed9829ad1', '-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAw6GbtR1Zm8ltUN1RKYFe
091kMP9AbjxyM7Fn634ZrnENYrV3YSzMCftrsauE6yeFz2D5QQOcwp5qj+sbmYv9
LoSOaa5dtelSIQaUg+5hAPlbEyzVNQq5IY+E6UkuZ1+hLjU0Cy/x4BCquEuOVTJe
cbN/OsRV0k5UscSud6eM/7You06tkBKIlfdiQZBVTNaebXhtBSPBT5uyJKnKXVbm
jA/AtwC5iLU/+yu1w0dAh9ctH23Nr+g/FpiUID/iWQmu5ZJ1Uk905HbMYdSlch+S
O555KyQvk2QfVovwpgLk+Db9kuMgYpcKID9KfUkooRcv1KZ7YVysTTRU/ZVURH72
HwIDAQAB
-----END PUBLIC KEY-----', 1795941424.220181);


--
-- Data for Name: idempotencykey; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: islet_migration; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.islet_migration VALUES (1, 'the tables of SQLite''s v10, events numbered at commit', '2026-11-29 08:37:03.036423+00');
INSERT INTO public.islet_migration VALUES (2, 'activities listed page by page in relevance order', '2026-11-29 08:37:03.245175+00');
INSERT INTO public.islet_migration VALUES (3, 'an app''s delivery paused', '2026-11-29 08:37:03.314121+00');
INSERT INTO public.islet_migration VALUES (4, 'room on activity pages for updates in place', '2026-11-29 08:37:03.316847+00');
INSERT INTO public.islet_migration VALUES (5, 'finished deliveries and an activity''s phone tokens found for the purge', '2026-11-29 08:37:03.325844+00');
INSERT INTO public.islet_migration VALUES (6, 'Android phones, FCM credentials, and Islet playing Google', '2026-11-29 08:37:03.337815+00');
INSERT INTO public.islet_migration VALUES (7, 'the push budget is each app''s on each phone', '2026-11-29 08:37:03.377851+00');
INSERT INTO public.islet_migration VALUES (8, 'a delivery keeps the trace of the change that wrote it', '2026-11-29 08:37:03.389848+00');
INSERT INTO public.islet_migration VALUES (9, 'webhook endpoints and their attempts', '2026-11-29 08:37:03.393831+00');
INSERT INTO public.islet_migration VALUES (10, 'an app''s users, their phones and tags; sends and their phones; idempotency keys', '2026-11-29 08:37:03.417823+00');


--
-- Data for Name: layout; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: phoneactivity; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.phoneactivity VALUES ('20486602-F568-42E0-8CDA-EC383DB193FC', 'com.example.upgrade', 'phone-2', 'development', NULL, 'active', '', 'ios');
INSERT INTO public.phoneactivity VALUES ('DF6AE534-56F0-4C44-B4E7-1D4A18B8E099', 'com.example.upgrade', 'android-1', 'production', NULL, 'active', '', 'android');


--
-- Data for Name: phonebudget; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: phonetoken; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.phonetoken VALUES ('abababababababababababababababababababababababababababababababab', 'pushToStart', 'com.example.upgrade', 'phone-2', 'Ride', NULL, 'development', 1795941424.0519578, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.phonetoken VALUES ('cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd', 'update', 'com.example.upgrade', 'phone-2', NULL, '20486602-F568-42E0-8CDA-EC383DB193FC', 'development', 1795941424.0830102, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.phonetoken VALUES ('fcm-eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee', 'fcm', 'com.example.upgrade', 'android-1', NULL, NULL, 'production', 1795941424.2450318, NULL, NULL, NULL, NULL, NULL, NULL);


--
-- Data for Name: providerkey; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.providerkey VALUES ('KEY1234567', 'TEAM123456', 'com.example.upgrade', '-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEpN/j+uwIvhFUxJM5jxOETe5kLccn
hPnkRc4NStb1BZ6fuyGAGKbkShZwWJYju4v/HsQhinLMBDNU2WXQccNTwA==
-----END PUBLIC KEY-----
', 1795941424.0212226);


--
-- Data for Name: pushtoken; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.pushtoken VALUES ('637752ffc82e207282f7aa406aa5ccf1cace732d56105fb78c3161360fd3dbde', 'pushToStart', NULL, 'default', 'com.example.upgrade', 1795941423.8920178, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('2c41803a1a88a103e91f819419964bb42e8836f91be50662038691b6203279f3', 'pushToStart', NULL, 'phone-2', 'com.example.upgrade', 1795941423.9017353, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('152838d6b9ba22fcacd8aabf34f9e2ad456de64b6d90c71025dd59a05dc65da4', 'activity', '14CF6CD6-BB68-46AF-A2C3-86F8F6C60401', 'default', 'com.example.upgrade', 1795941424.0109606, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('6bIZ8tItgno0-ySR7XfCZQ:APA91beBAdymj2gmBkMPX-c0DfALl4i9bb2zKLVdIKKb5NELRE3aX9JS1u5kbOBaN7ZXIO61Sb9O7nc3DMmMLLgwZ59DPQ_NfjxZ8Xt_cx7VLceQ2zGSjCT-2HdZJ4xE48w0oT9u5ShQ', 'fcm', NULL, 'android-1', 'com.example.upgrade', 1795941424.2371683, NULL, NULL);


--
-- Data for Name: send; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: sendtarget; Type: TABLE DATA; Schema: public; Owner: -
--



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

SELECT pg_catalog.setval('public.delivery_id_seq', 6, true);


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
-- Name: appuser appuser_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.appuser
    ADD CONSTRAINT appuser_pkey PRIMARY KEY (bundleid, externalid);


--
-- Name: appuserdevice appuserdevice_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.appuserdevice
    ADD CONSTRAINT appuserdevice_pkey PRIMARY KEY (bundleid, deviceid, externalid);


--
-- Name: appusertag appusertag_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.appusertag
    ADD CONSTRAINT appusertag_pkey PRIMARY KEY (bundleid, name, value, externalid);


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
-- Name: idempotencykey idempotencykey_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.idempotencykey
    ADD CONSTRAINT idempotencykey_pkey PRIMARY KEY (scope, key);


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
-- Name: send send_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.send
    ADD CONSTRAINT send_pkey PRIMARY KEY (id);


--
-- Name: sendtarget sendtarget_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.sendtarget
    ADD CONSTRAINT sendtarget_pkey PRIMARY KEY (sendid, deviceid);


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

CREATE INDEX activity_key ON public.activity USING btree (bundleid, key, deviceid) WHERE (key IS NOT NULL);


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
-- Name: appuserdevice_user; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX appuserdevice_user ON public.appuserdevice USING btree (bundleid, externalid);


--
-- Name: appusertag_user; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX appusertag_user ON public.appusertag USING btree (bundleid, externalid);


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
-- Name: idempotencykey_createdat; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX idempotencykey_createdat ON public.idempotencykey USING btree (createdat);


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
-- Name: send_bundleid; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX send_bundleid ON public.send USING btree (bundleid, id);


--
-- Name: send_due; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX send_due ON public.send USING btree (status, at);


--
-- Name: sendtarget_seq; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX sendtarget_seq ON public.sendtarget USING btree (sendid, seq);


--
-- Name: sendtarget_waiting; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX sendtarget_waiting ON public.sendtarget USING btree (sendid, seq) WHERE (outcome IS NULL);


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


