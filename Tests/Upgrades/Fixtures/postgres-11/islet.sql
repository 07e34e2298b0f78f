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
    failure text,
    kind text DEFAULT 'team'::text NOT NULL,
    topics text,
    relatedkeyid text
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
    createdat double precision NOT NULL,
    kind text DEFAULT 'topic'::text NOT NULL,
    environment text
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

INSERT INTO public.activity VALUES ('D38BB568-2AB1-41B3-A41D-391C9253D16F', 'com.example.upgrade', 'default', 'Ride', 'active', NULL, 1796205313.3788981, 0, 1796176513.3788981, 1796176513.3788981, 1796176513.5114088, '{"activityState":"active","attributes":{"route":"active"},"attributesType":"Ride","autoEndAt":1796205313.3788981,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":6}},"createdAt":1796176513.3788981,"device":"default","id":"D38BB568-2AB1-41B3-A41D-391C9253D16F","lastUpdateTimestamp":1796176513.5114088,"source":"api","startedAt":1796176513.3788981,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('0C4095DE-6A6B-4897-85E9-873CBA0575E5', 'com.example.upgrade', 'default', 'Ride', 'ended', NULL, 1796190913.6349468, 0, 1796176513.5544262, 1796176513.5544262, 1796176513.6349468, '{"activityState":"ended","attributes":{"route":"ended"},"attributesType":"Ride","autoEndAt":1796205313.5544262,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":0}},"createdAt":1796176513.5544262,"device":"default","dismissAt":1796190913.6349468,"endedAt":1796176513.6349468,"id":"0C4095DE-6A6B-4897-85E9-873CBA0575E5","lastUpdateTimestamp":1796176513.6349468,"source":"api","startedAt":1796176513.5544262,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('BB472BD4-440E-4657-9AA3-4FD83FBC4D63', 'com.example.upgrade', 'phone-2', 'Ride', 'dismissed', NULL, NULL, 0, 1796176513.6682692, 1796176513.6682692, 1796176513.7234964, '{"activityState":"dismissed","attributes":{"route":"dismissed"},"attributesType":"Ride","autoEndAt":1796205313.6682692,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1796176513.6682692,"device":"phone-2","dismissAt":1796176513.7234964,"dismissedAt":1796176513.7234964,"endedAt":1796176513.7234964,"id":"BB472BD4-440E-4657-9AA3-4FD83FBC4D63","source":"api","startedAt":1796176513.6682692,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('CA9494AD-9B21-460C-A5F0-E3C01132C65E', 'com.example.upgrade', 'default', 'Ride', 'active', 'order-7', 1796205313.7722208, 0, 1796176513.7722208, 1796176513.7722208, 1796176513.859171, '{"activityState":"active","attributes":{"route":"key"},"attributesType":"Ride","autoEndAt":1796205313.7722208,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":2}},"createdAt":1796176513.7722208,"device":"default","id":"CA9494AD-9B21-460C-A5F0-E3C01132C65E","key":"order-7","lastUpdateTimestamp":1796176513.859171,"source":"api","startedAt":1796176513.7722208,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('84D668D2-0AF5-4F37-9B1E-BA66A8A6EDB8', 'com.example.upgrade', 'default', 'Ride', 'active', NULL, 1796205313.9046452, 0, 1796176513.9046452, 1796176513.9046452, 1796176513.9046452, '{"activityState":"active","attributes":{"route":"token"},"attributesType":"Ride","autoEndAt":1796205313.9046452,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1796176513.9046452,"device":"default","id":"84D668D2-0AF5-4F37-9B1E-BA66A8A6EDB8","pushToken":"70adbd4fd2408b2ed922bb8a157d9de69c999bc74d20bc9a72aa2b972670c76b","pushType":"token","source":"api","startedAt":1796176513.9046452,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('2CC8FF7E-2AF4-45CF-B480-56FA573B0628', 'com.example.upgrade', 'phone-2', 'Ride', 'active', NULL, 1796205314.2048798, 0, 1796176514.2048798, 1796176514.2048798, 1796176514.411747, '{"activityState":"active","attributes":{"route":"delivered"},"attributesType":"Ride","autoEndAt":1796205314.2048798,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":7}},"createdAt":1796176514.2048798,"device":"phone-2","id":"2CC8FF7E-2AF4-45CF-B480-56FA573B0628","lastUpdateTimestamp":1796176514.411747,"source":"api","startedAt":1796176514.2048798,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('D3A2BC19-382A-4C78-8DEC-5B94AB01CFB4', 'com.example.upgrade', 'android-1', 'Ride', 'active', NULL, 1796205315.554924, 0, 1796176515.554924, 1796176515.554924, 1796176515.635573, '{"activityState":"active","attributes":{"route":"android"},"attributesType":"Ride","autoEndAt":1796205315.554924,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":5}},"createdAt":1796176515.554924,"device":"android-1","id":"D3A2BC19-382A-4C78-8DEC-5B94AB01CFB4","lastUpdateTimestamp":1796176515.635573,"source":"api","startedAt":1796176515.554924,"style":"standard"}', NULL, DEFAULT);


--
-- Data for Name: activitytype; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: androidnotification; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: apikey; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.apikey VALUES ('65e7c6881371bd45053657fd733db9b33ddd31073a8f181ca9af7de8107dc1fc', NULL, NULL, 1796176511.9757009);
INSERT INTO public.apikey VALUES ('ac83b671ad8962ba19e683688a7cc0024a3475ede720d1d67e130c243c131501', 'com.example.upgrade', NULL, 1796176513.2270417);


--
-- Data for Name: app; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.app VALUES ('com.example.upgrade', 'Upgrade', 1796176513.2267213, false, false);


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

INSERT INTO public.channel VALUES ('NTihOAiq86nI8hh2B5ZyiQ==', 'com.example.upgrade', 1, 1796176514.0564718, NULL, NULL, NULL, NULL);


--
-- Data for Name: delivery; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.delivery VALUES (2, 'activity:2CC8FF7E-2AF4-45CF-B480-56FA573B0628', '2CC8FF7E-2AF4-45CF-B480-56FA573B0628', 'com.example.upgrade', 'phone-2', NULL, 'update', '{"aps":{"content-state":{"eta":7},"event":"update","timestamp":1796176514}}', false, 1796205314.411747, 'pending', 0, 1796176514.411747, NULL, 1796176514.411747, NULL, '72852337-94a3-4acc-a45c-8086f846cbd6', NULL);
INSERT INTO public.delivery VALUES (3, 'activity:D3A2BC19-382A-4C78-8DEC-5B94AB01CFB4', 'D3A2BC19-382A-4C78-8DEC-5B94AB01CFB4', 'com.example.upgrade', 'android-1', NULL, 'start', '{"activityId":"D3A2BC19-382A-4C78-8DEC-5B94AB01CFB4","attributes":{"route":"android"},"attributesType":"Ride","bundleId":"com.example.upgrade","contentState":{"eta":10},"event":"start","notification":{"text":"Eta 10","title":"Ride"},"timestamp":1796176515}', true, 1796205315.554924, 'sending', 1, 1796176515.554924, 1796176575.620163, 1796176515.554924, NULL, 'e2e301fc-76c4-405a-90b5-3d913a278396', NULL);
INSERT INTO public.delivery VALUES (4, 'activity:D3A2BC19-382A-4C78-8DEC-5B94AB01CFB4', 'D3A2BC19-382A-4C78-8DEC-5B94AB01CFB4', 'com.example.upgrade', 'android-1', NULL, 'update', '{"activityId":"D3A2BC19-382A-4C78-8DEC-5B94AB01CFB4","attributes":{"route":"android"},"attributesType":"Ride","bundleId":"com.example.upgrade","contentState":{"eta":5},"event":"update","notification":{"text":"Eta 5","title":"Ride"},"timestamp":1796176515}', false, 1796205315.635573, 'pending', 0, 1796176515.635573, NULL, 1796176515.635573, NULL, 'c4210ef4-b0ff-42bf-82b8-5ad8ecf40855', NULL);
INSERT INTO public.delivery VALUES (1, 'activity:2CC8FF7E-2AF4-45CF-B480-56FA573B0628', '2CC8FF7E-2AF4-45CF-B480-56FA573B0628', 'com.example.upgrade', 'phone-2', NULL, 'start', '{"aps":{"alert":{"body":"","title":"Upgrade"},"attributes":{"islet":"2CC8FF7E-2AF4-45CF-B480-56FA573B0628","route":"delivered"},"attributes-type":"Ride","content-state":{"eta":10},"event":"start","input-push-token":1,"timestamp":1796176514}}', true, 1796205314.2048798, 'pending', 3, 1796176519.3571124, NULL, 1796176514.2048798, NULL, 'e365eb0c-78ff-4501-b5ba-aad81c8570dc', NULL);


--
-- Data for Name: deliverycredential; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.deliverycredential VALUES ('com.example.upgrade', 'development', 'TEAM123456', 'KEY7654321', '-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgKMgbTbqTlA1VH0R7
IWTAyATwp/OViOeKSdHZQAnjAKChRANCAARH4IHu2S9pFrq3LzZ9rSndEcj2iZKs
jxXB4DNFqRgQB0NGNWmVVdrN1uoRsjESju0hcxTUk/BstUKXah/ZonIp
-----END PRIVATE KEY-----
', 'https://127.0.0.1:9', NULL, 1796176514.091197, NULL, 'team', NULL, NULL);


--
-- Data for Name: device; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.device VALUES ('default', 'Default', 1796176511.8963795, 'ios');
INSERT INTO public.device VALUES ('phone-2', 'Second phone', 1796176513.313713, 'ios');
INSERT INTO public.device VALUES ('android-1', 'Pixel', 1796176515.3814716, 'android');


--
-- Data for Name: event; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.event VALUES (1, 1796176513.3788981, 'started', 'com.example.upgrade', 'default', 'D38BB568-2AB1-41B3-A41D-391C9253D16F', '{"activityState":"active","attributes":{"route":"active"},"attributesType":"Ride","autoEndAt":1796205313.3788981,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1796176513.3788981,"device":"default","id":"D38BB568-2AB1-41B3-A41D-391C9253D16F","source":"api","startedAt":1796176513.3788981,"style":"standard"}');
INSERT INTO public.event VALUES (2, 1796176513.4614348, 'contentUpdated', 'com.example.upgrade', 'default', 'D38BB568-2AB1-41B3-A41D-391C9253D16F', '{"content":{"relevanceScore":0,"state":{"eta":8}},"timestamp":1796176513.4614348}');
INSERT INTO public.event VALUES (3, 1796176513.5114088, 'contentUpdated', 'com.example.upgrade', 'default', 'D38BB568-2AB1-41B3-A41D-391C9253D16F', '{"content":{"relevanceScore":0,"state":{"eta":6}},"timestamp":1796176513.5114088}');
INSERT INTO public.event VALUES (4, 1796176513.5114088, 'alert', 'com.example.upgrade', 'default', 'D38BB568-2AB1-41B3-A41D-391C9253D16F', '{"body":"6 minutes","title":"Closer"}');
INSERT INTO public.event VALUES (5, 1796176513.5544262, 'started', 'com.example.upgrade', 'default', '0C4095DE-6A6B-4897-85E9-873CBA0575E5', '{"activityState":"active","attributes":{"route":"ended"},"attributesType":"Ride","autoEndAt":1796205313.5544262,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1796176513.5544262,"device":"default","id":"0C4095DE-6A6B-4897-85E9-873CBA0575E5","source":"api","startedAt":1796176513.5544262,"style":"standard"}');
INSERT INTO public.event VALUES (6, 1796176513.5910811, 'contentUpdated', 'com.example.upgrade', 'default', '0C4095DE-6A6B-4897-85E9-873CBA0575E5', '{"content":{"relevanceScore":0,"state":{"eta":4}},"timestamp":1796176513.5910811}');
INSERT INTO public.event VALUES (7, 1796176513.6349468, 'contentUpdated', 'com.example.upgrade', 'default', '0C4095DE-6A6B-4897-85E9-873CBA0575E5', '{"content":{"relevanceScore":0,"state":{"eta":0}},"timestamp":1796176513.6349468}');
INSERT INTO public.event VALUES (8, 1796176513.6349468, 'stateChanged', 'com.example.upgrade', 'default', '0C4095DE-6A6B-4897-85E9-873CBA0575E5', '{"at":1796176513.6349468,"from":"active","reason":"endedByApp","to":"ended"}');
INSERT INTO public.event VALUES (9, 1796176513.6682692, 'started', 'com.example.upgrade', 'phone-2', 'BB472BD4-440E-4657-9AA3-4FD83FBC4D63', '{"activityState":"active","attributes":{"route":"dismissed"},"attributesType":"Ride","autoEndAt":1796205313.6682692,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1796176513.6682692,"device":"phone-2","id":"BB472BD4-440E-4657-9AA3-4FD83FBC4D63","source":"api","startedAt":1796176513.6682692,"style":"standard"}');
INSERT INTO public.event VALUES (10, 1796176513.7234964, 'stateChanged', 'com.example.upgrade', 'phone-2', 'BB472BD4-440E-4657-9AA3-4FD83FBC4D63', '{"at":1796176513.7234964,"from":"active","reason":"endedByApp","to":"ended"}');
INSERT INTO public.event VALUES (11, 1796176513.7234964, 'stateChanged', 'com.example.upgrade', 'phone-2', 'BB472BD4-440E-4657-9AA3-4FD83FBC4D63', '{"at":1796176513.7234964,"from":"ended","reason":"dismissalPolicy","to":"dismissed"}');
INSERT INTO public.event VALUES (12, 1796176513.7722208, 'started', 'com.example.upgrade', 'default', 'CA9494AD-9B21-460C-A5F0-E3C01132C65E', '{"activityState":"active","attributes":{"route":"key"},"attributesType":"Ride","autoEndAt":1796205313.7722208,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":3}},"createdAt":1796176513.7722208,"device":"default","id":"CA9494AD-9B21-460C-A5F0-E3C01132C65E","key":"order-7","source":"api","startedAt":1796176513.7722208,"style":"standard"}');
INSERT INTO public.event VALUES (13, 1796176513.859171, 'contentUpdated', 'com.example.upgrade', 'default', 'CA9494AD-9B21-460C-A5F0-E3C01132C65E', '{"content":{"relevanceScore":0,"state":{"eta":2}},"timestamp":1796176513.859171}');
INSERT INTO public.event VALUES (14, 1796176513.9046452, 'started', 'com.example.upgrade', 'default', '84D668D2-0AF5-4F37-9B1E-BA66A8A6EDB8', '{"activityState":"active","attributes":{"route":"token"},"attributesType":"Ride","autoEndAt":1796205313.9046452,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1796176513.9046452,"device":"default","id":"84D668D2-0AF5-4F37-9B1E-BA66A8A6EDB8","pushToken":"70adbd4fd2408b2ed922bb8a157d9de69c999bc74d20bc9a72aa2b972670c76b","pushType":"token","source":"api","startedAt":1796176513.9046452,"style":"standard"}');
INSERT INTO public.event VALUES (15, 1796176513.9046452, 'pushTokenUpdated', 'com.example.upgrade', 'default', '84D668D2-0AF5-4F37-9B1E-BA66A8A6EDB8', '{"kind":"activity","pushToken":"70adbd4fd2408b2ed922bb8a157d9de69c999bc74d20bc9a72aa2b972670c76b"}');
INSERT INTO public.event VALUES (16, 1796176514.1427531, 'pushTokenUpdated', 'com.example.upgrade', 'phone-2', NULL, '{"attributesType":"Ride","kind":"phonePushToStart","pushToken":"abababababababababababababababababababababababababababababababab"}');
INSERT INTO public.event VALUES (17, 1796176514.2048798, 'started', 'com.example.upgrade', 'phone-2', '2CC8FF7E-2AF4-45CF-B480-56FA573B0628', '{"activityState":"active","attributes":{"route":"delivered"},"attributesType":"Ride","autoEndAt":1796205314.2048798,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1796176514.2048798,"device":"phone-2","id":"2CC8FF7E-2AF4-45CF-B480-56FA573B0628","source":"api","startedAt":1796176514.2048798,"style":"standard"}');
INSERT INTO public.event VALUES (18, 1796176514.2048798, 'delivery', 'com.example.upgrade', 'phone-2', '2CC8FF7E-2AF4-45CF-B480-56FA573B0628', '{"attempt":0,"delivery":1,"event":"start","note":"push-to-start to abababab…abababab (development); an alert supplied (\"Upgrade\"): a push-to-start needs one","outcome":"queued"}');
INSERT INTO public.event VALUES (19, 1796176514.30475, 'pushTokenUpdated', 'com.example.upgrade', 'phone-2', '2CC8FF7E-2AF4-45CF-B480-56FA573B0628', '{"kind":"phoneUpdate","pushToken":"cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd"}');
INSERT INTO public.event VALUES (20, 1796176514.411747, 'contentUpdated', 'com.example.upgrade', 'phone-2', '2CC8FF7E-2AF4-45CF-B480-56FA573B0628', '{"content":{"relevanceScore":0,"state":{"eta":7}},"timestamp":1796176514.411747}');
INSERT INTO public.event VALUES (21, 1796176514.411747, 'delivery', 'com.example.upgrade', 'phone-2', '2CC8FF7E-2AF4-45CF-B480-56FA573B0628', '{"attempt":0,"delivery":2,"event":"update","outcome":"queued"}');
INSERT INTO public.event VALUES (22, 1796176514.516506, 'delivery', 'com.example.upgrade', 'phone-2', '2CC8FF7E-2AF4-45CF-B480-56FA573B0628', '{"apnsId":"e365eb0c-78ff-4501-b5ba-aad81c8570dc","attempt":1,"delivery":1,"environment":"development","event":"start","latencyMs":130.709611,"nextAttemptAt":1796176515.3058279,"note":"no connection: Connection errors: SingleConnectionFailure(target: [IPv4]127.0.0.1/127.0.0.1:9, error: connection reset (error set): Connection refused) (errno: 111))","outcome":"retrying","priority":10,"priorityReason":"a start (push-to-start has its own budget on the phone)","target":"abababab…abababab"}');
INSERT INTO public.event VALUES (23, 1796176515.4234762, 'delivery', 'com.example.upgrade', 'phone-2', '2CC8FF7E-2AF4-45CF-B480-56FA573B0628', '{"apnsId":"e365eb0c-78ff-4501-b5ba-aad81c8570dc","attempt":2,"delivery":1,"environment":"development","event":"start","latencyMs":3.297322,"nextAttemptAt":1796176516.433236,"note":"no connection: Connection errors: SingleConnectionFailure(target: [IPv4]127.0.0.1/127.0.0.1:9, error: connection reset (error set): Connection refused) (errno: 111))","outcome":"retrying","priority":10,"priorityReason":"a start (push-to-start has its own budget on the phone)","target":"abababab…abababab"}');
INSERT INTO public.event VALUES (24, 1796176515.4888306, 'pushTokenUpdated', 'com.example.upgrade', 'android-1', NULL, '{"kind":"fcm","pushToken":"fcm-eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"}');
INSERT INTO public.event VALUES (25, 1796176515.554924, 'started', 'com.example.upgrade', 'android-1', 'D3A2BC19-382A-4C78-8DEC-5B94AB01CFB4', '{"activityState":"active","attributes":{"route":"android"},"attributesType":"Ride","autoEndAt":1796205315.554924,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1796176515.554924,"device":"android-1","id":"D3A2BC19-382A-4C78-8DEC-5B94AB01CFB4","source":"api","startedAt":1796176515.554924,"style":"standard"}');
INSERT INTO public.event VALUES (26, 1796176515.554924, 'delivery', 'com.example.upgrade', 'android-1', 'D3A2BC19-382A-4C78-8DEC-5B94AB01CFB4', '{"attempt":0,"delivery":3,"event":"start","note":"to Android phone fcm-eeee…eeeeeeee through FCM","outcome":"queued"}');
INSERT INTO public.event VALUES (29, 1796176516.5276408, 'delivery', 'com.example.upgrade', 'phone-2', '2CC8FF7E-2AF4-45CF-B480-56FA573B0628', '{"apnsId":"e365eb0c-78ff-4501-b5ba-aad81c8570dc","attempt":3,"delivery":1,"environment":"development","event":"start","latencyMs":2.214484,"nextAttemptAt":1796176519.3571124,"note":"no connection: Connection errors: SingleConnectionFailure(target: [IPv4]127.0.0.1/127.0.0.1:9, error: connection reset (error set): Connection refused) (errno: 111))","outcome":"retrying","priority":10,"priorityReason":"a start (push-to-start has its own budget on the phone)","target":"abababab…abababab"}');
INSERT INTO public.event VALUES (27, 1796176515.635573, 'contentUpdated', 'com.example.upgrade', 'android-1', 'D3A2BC19-382A-4C78-8DEC-5B94AB01CFB4', '{"content":{"relevanceScore":0,"state":{"eta":5}},"timestamp":1796176515.635573}');
INSERT INTO public.event VALUES (28, 1796176515.635573, 'delivery', 'com.example.upgrade', 'android-1', 'D3A2BC19-382A-4C78-8DEC-5B94AB01CFB4', '{"attempt":0,"delivery":4,"event":"update","outcome":"queued"}');


--
-- Data for Name: fcmaccesstoken; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: fcmcredential; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.fcmcredential VALUES ('com.example.upgrade', 'islet-upgrade', 'firebase-adminsdk-deo8o@islet-upgrade.iam.gserviceaccount.com', '9fe5de6efc82a1068571b76f6d88b42518c42972', 'https://127.0.0.1:39115/token', '{"auth_provider_x509_cert_url":"https://www.googleapis.com/oauth2/v1/certs","auth_uri":"https://accounts.google.com/o/oauth2/auth","client_email":"firebase-adminsdk-deo8o@islet-upgrade.iam.gserviceaccount.com","client_id":"166131635480571003403","client_x509_cert_url":"https://www.googleapis.com/robot/v1/metadata/x509/firebase%2Dadminsdk%2Ddeo8o%40islet%2Dupgrade%2Eiam%2Egserviceaccount%2Ecom","private_key":"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQCjUKuboQyBs3/5\ncaxlU/ZtIg0yg6e71H3r2520MieAzfU0aOLvBymEJdcuwpTcP0d4Og19B3NNdNsi\ndKOFc8Crn3keQdKItfKZA2KzwFvH8faOvMJS4BrwoJtRBgKfS5O5Hu7HMVhqd5pq\nt6QY5JYq0qtVlYKzjEsF2VIfZgCIonGCQCp1oK6kN/1wSbgLIvTYWzUJAT9QM4tl\njdafNcJV5DUIhqtNaXxLyrBKinBeAWSMjLmLJ7KvZt+2QIn7pCH1jFbzZZVVlb0t\n0rr/r17hbkEX9PpzvzEVo6Y2a26UT3CDTE9RhBJNIinE51w7NlPmSGLGKv4ABxmm\n/SokZ73hAgMBAAECggEABLKETRSjxHNCQg139O4mT1tEX+iTgX6KJKeLcKxkoHrM\nC7bcmB1vn0JrXwfvuioDxzx8ONVnBppO1z3dmjALIaSTmkAwawg4sxf61cq5mRWn\njtF1EWcqvzMPZJQ0rRpCZHe0THxp254XDey8Ro8ElrS6gtqrCLkHS2LFzutjJorh\nzU7Mu5fU6ubxH8+PiMhR/Ksn+iQvHeJ4dPje8CqKuBoRkFqsAD/MVEJA+SQzhrKI\nFLgCZ6W1Lk+9yoTKGZmfY5pgsKdHWy52asSkMeVMvS7qJEk72NVYul0xZyfppbG2\nHyUy8GCGllsBU0i+F/lR6bPIr0GI5HUdXY1/IbN4dQKBgQDU39nx8mmZr4e/rOEI\nyvew9aLtKVkEx14gNWlziHqZC5ySCePGwDzRFuW2AAFiY4W+8CVJGq/W14BzevPg\nM6R8zUuyvDO2xck+EJD2qSoTgJAW34KfV3QvMBzaWwE6xkylwLLQ9UKktyV6X9N5\n66Vwv1IdXf/hwbu4JHzuM7eNpwKBgQDEZo/F1h4o0fC/OQ/0VLIno4yZLs/ZjrrA\n9ZBeDw+DpstqtlqYGgkk4j5O+3iH8t6uilRF+kyPG9Ct7YmxeC46pv52cZjPsi7g\ndUDSQNwgQuatP7q5WlTYYNoUMidpOycT+w12ioDbEGgEgf7rCoTQ0KDuNkv0uVYi\nRJc6jiUZNwKBgBqeXz9s452PIHdsY7tYvf5HyPbE+9eoInH+m9ARmdr3Y72zNONO\neIxgw5qth37JGRlWKCNrDd/clLhcAJDhhEkC1ttjw0ewlciIA8iEQLmtktb5XfkU\n03dvGbyIMrApyb3UScftU0cLi8kwoF4XhFmD4v2/GlcdhZ6yGVkj6GjzAoGAbQtQ\nuhQW7K0bkOA6xnqb67w3nPlLt8wyTl5JSJ/uCjd6a4ZRqG+UMiFXXPzsP/cNwjTV\nc4D0LuTPqTHgqGNEr5X2ZIbPxEl3E3KmidYvIc5jSz++CZlo0DZ9/oaWMSwBl2tl\nXzKpNnfWeOJASfmuIk4je/8zju20MBSLLpyrZmMCgYEAnDql8RrzC6Idu8SA9+ff\nxwy1htFhczTWpOpJdylxOW4bwZHplC0X34CsW+2REizhkZnBHsdG6GodnhE8VqNM\nD+8oBO/sQQyUcVmKqEEn9zg0ADrtal6HUPbJcND3pKQHUyuwBkOtyj047ZlE+aX+\nJHKhybDB8S86WxAJpsFcWG8=\n-----END PRIVATE KEY-----\n\n","private_key_id":"9fe5de6efc82a1068571b76f6d88b42518c42972","project_id":"islet-upgrade","token_uri":"https://127.0.0.1:39115/token","type":"service_account","universe_domain":"googleapis.com"}', 'https://127.0.0.1:9', NULL, 1796176515.2934732, NULL);


--
-- Data for Name: fcmserviceaccount; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.fcmserviceaccount VALUES ('firebase-adminsdk-deo8o@islet-upgrade.iam.gserviceaccount.com', 'islet-upgrade', '9fe5de6efc82a1068571b76f6d88b42518c42972', '-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAo1Crm6EMgbN/+XGsZVP2
bSINMoOnu9R969udtDIngM31NGji7wcphCXXLsKU3D9HeDoNfQdzTXTbInSjhXPA
q595HkHSiLXymQNis8Bbx/H2jrzCUuAa8KCbUQYCn0uTuR7uxzFYaneaarekGOSW
KtKrVZWCs4xLBdlSH2YAiKJxgkAqdaCupDf9cEm4CyL02Fs1CQE/UDOLZY3WnzXC
VeQ1CIarTWl8S8qwSopwXgFkjIy5iyeyr2bftkCJ+6Qh9YxW82WVVZW9LdK6/69e
4W5BF/T6c78xFaOmNmtulE9wg0xPUYQSTSIpxOdcOzZT5khixir+AAcZpv0qJGe9
4QIDAQAB
-----END PUBLIC KEY-----', 1796176515.2413568);


--
-- Data for Name: idempotencykey; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: islet_migration; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.islet_migration VALUES (1, 'the tables of SQLite''s v10, events numbered at commit', '2026-12-02 01:55:10.488431+00');
INSERT INTO public.islet_migration VALUES (2, 'activities listed page by page in relevance order', '2026-12-02 01:55:10.821838+00');
INSERT INTO public.islet_migration VALUES (3, 'an app''s delivery paused', '2026-12-02 01:55:10.935547+00');
INSERT INTO public.islet_migration VALUES (4, 'room on activity pages for updates in place', '2026-12-02 01:55:10.963151+00');
INSERT INTO public.islet_migration VALUES (5, 'finished deliveries and an activity''s phone tokens found for the purge', '2026-12-02 01:55:10.983275+00');
INSERT INTO public.islet_migration VALUES (6, 'Android phones, FCM credentials, and Islet playing Google', '2026-12-02 01:55:11.031334+00');
INSERT INTO public.islet_migration VALUES (7, 'the push budget is each app''s on each phone', '2026-12-02 01:55:11.117973+00');
INSERT INTO public.islet_migration VALUES (8, 'a delivery keeps the trace of the change that wrote it', '2026-12-02 01:55:11.154953+00');
INSERT INTO public.islet_migration VALUES (9, 'webhook endpoints and their attempts', '2026-12-02 01:55:11.205793+00');
INSERT INTO public.islet_migration VALUES (10, 'an app''s users, their phones and tags; sends and their phones; idempotency keys', '2026-12-02 01:55:11.278345+00');
INSERT INTO public.islet_migration VALUES (11, 'Firebase installation IDs; Apple''s key sets', '2026-12-02 01:55:11.432378+00');


--
-- Data for Name: layout; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: phoneactivity; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.phoneactivity VALUES ('2CC8FF7E-2AF4-45CF-B480-56FA573B0628', 'com.example.upgrade', 'phone-2', 'development', NULL, 'active', '', 'ios');
INSERT INTO public.phoneactivity VALUES ('D3A2BC19-382A-4C78-8DEC-5B94AB01CFB4', 'com.example.upgrade', 'android-1', 'production', NULL, 'active', '', 'android');


--
-- Data for Name: phonebudget; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: phonetoken; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.phonetoken VALUES ('abababababababababababababababababababababababababababababababab', 'pushToStart', 'com.example.upgrade', 'phone-2', 'Ride', NULL, 'development', 1796176514.1427531, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.phonetoken VALUES ('cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd', 'update', 'com.example.upgrade', 'phone-2', NULL, '2CC8FF7E-2AF4-45CF-B480-56FA573B0628', 'development', 1796176514.30475, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.phonetoken VALUES ('fcm-eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee', 'fcm', 'com.example.upgrade', 'android-1', NULL, NULL, 'production', 1796176515.4888306, NULL, NULL, NULL, NULL, NULL, NULL);


--
-- Data for Name: providerkey; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.providerkey VALUES ('KEY1234567', 'TEAM123456', 'com.example.upgrade', '-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEpCPI026GtYUBMVagaabK3Jm4IT/1
LE6Ee7SR5QLd5CpzWS8jo2o1EAyPL202goMLNuC9ea4XMxV7I7tri2uxGQ==
-----END PUBLIC KEY-----
', 1796176513.9838905, 'topic', NULL);


--
-- Data for Name: pushtoken; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.pushtoken VALUES ('71a38b0559a77ccaf3672cfe2d841b1a35a9384730e67d66a7d9f2a54e32e5e9', 'pushToStart', NULL, 'default', 'com.example.upgrade', 1796176513.2270417, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('673d0e5eb4bfc4de52eb6be6df0442894f3a479025459b2266ace9755e726c1a', 'pushToStart', NULL, 'phone-2', 'com.example.upgrade', 1796176513.3137481, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('70adbd4fd2408b2ed922bb8a157d9de69c999bc74d20bc9a72aa2b972670c76b', 'activity', '84D668D2-0AF5-4F37-9B1E-BA66A8A6EDB8', 'default', 'com.example.upgrade', 1796176513.9046452, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('X95l1qpEZADcO_xDJqN19g:APA91bAVGS6NhqwVGksiUxNluZ8egMJ7I1BCZ0kMN6GWcvXitgpKfS5gqYHnF7hxggZxP8NsisznGihPaP75HX1-mjyepYVBZH0f4Q3GcVxliNiBZV9n7zsOZz-O5TWETVeMk9HdAG_g', 'fcm', NULL, 'android-1', 'com.example.upgrade', 1796176515.3815112, NULL, NULL);


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

SELECT pg_catalog.setval('public.delivery_id_seq', 4, true);


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
    ADD CONSTRAINT deliverycredential_pkey PRIMARY KEY (bundleid, environment, keyid);


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

CREATE INDEX phonetoken_fcm ON public.phonetoken USING btree (deviceid, bundleid) WHERE ((kind = ANY (ARRAY['fcm'::text, 'fid'::text])) AND (retiredat IS NULL));


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


