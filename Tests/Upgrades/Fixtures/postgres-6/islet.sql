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

INSERT INTO public.activity VALUES ('403CEE93-198A-4D5B-9EF6-1694020F9671', 'com.example.upgrade', 'default', 'Ride', 'active', NULL, 1795804370.8175352, 0, 1795775570.8175352, 1795775570.8175352, 1795775570.8402882, '{"activityState":"active","attributes":{"route":"active"},"attributesType":"Ride","autoEndAt":1795804370.8175352,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":6}},"createdAt":1795775570.8175352,"device":"default","id":"403CEE93-198A-4D5B-9EF6-1694020F9671","lastUpdateTimestamp":1795775570.8402882,"startedAt":1795775570.8175352,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('CCA6645C-2D21-4E91-B9E8-CA108D82B533', 'com.example.upgrade', 'default', 'Ride', 'ended', NULL, 1795789970.8596582, 0, 1795775570.8452513, 1795775570.8452513, 1795775570.8596582, '{"activityState":"ended","attributes":{"route":"ended"},"attributesType":"Ride","autoEndAt":1795804370.8452513,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":0}},"createdAt":1795775570.8452513,"device":"default","dismissAt":1795789970.8596582,"endedAt":1795775570.8596582,"id":"CCA6645C-2D21-4E91-B9E8-CA108D82B533","lastUpdateTimestamp":1795775570.8596582,"startedAt":1795775570.8452513,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('963E7621-F5F2-43B6-BD0E-31E1C8A6F2B4', 'com.example.upgrade', 'phone-2', 'Ride', 'dismissed', NULL, NULL, 0, 1795775570.8651245, 1795775570.8651245, 1795775570.8739195, '{"activityState":"dismissed","attributes":{"route":"dismissed"},"attributesType":"Ride","autoEndAt":1795804370.8651245,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795775570.8651245,"device":"phone-2","dismissAt":1795775570.8739195,"dismissedAt":1795775570.8739195,"endedAt":1795775570.8739195,"id":"963E7621-F5F2-43B6-BD0E-31E1C8A6F2B4","startedAt":1795775570.8651245,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('52BE71AF-FF19-482E-931A-FAFD85E794DD', 'com.example.upgrade', 'default', 'Ride', 'active', 'order-7', 1795804370.8798075, 0, 1795775570.8798075, 1795775570.8798075, 1795775570.890996, '{"activityState":"active","attributes":{"route":"key"},"attributesType":"Ride","autoEndAt":1795804370.8798075,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":2}},"createdAt":1795775570.8798075,"device":"default","id":"52BE71AF-FF19-482E-931A-FAFD85E794DD","key":"order-7","lastUpdateTimestamp":1795775570.890996,"startedAt":1795775570.8798075,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('AE72A357-E9FD-4308-8D5E-07B79AD621F7', 'com.example.upgrade', 'default', 'Ride', 'active', NULL, 1795804370.898759, 0, 1795775570.898759, 1795775570.898759, 1795775570.898759, '{"activityState":"active","attributes":{"route":"token"},"attributesType":"Ride","autoEndAt":1795804370.898759,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795775570.898759,"device":"default","id":"AE72A357-E9FD-4308-8D5E-07B79AD621F7","pushToken":"52b3b7c35224c25a45d70756329896e6fdfab370dc119a5a2f3adca9e3afc2b7","pushType":"token","startedAt":1795775570.898759,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('EB684715-63EA-4919-81C9-77C696F7C909', 'com.example.upgrade', 'phone-2', 'Ride', 'active', NULL, 1795804370.939255, 0, 1795775570.939255, 1795775570.939255, 1795775570.9722052, '{"activityState":"active","attributes":{"route":"delivered"},"attributesType":"Ride","autoEndAt":1795804370.939255,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":7}},"createdAt":1795775570.939255,"device":"phone-2","id":"EB684715-63EA-4919-81C9-77C696F7C909","lastUpdateTimestamp":1795775570.9722052,"startedAt":1795775570.939255,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('753D9997-A6A8-428E-8A36-318BD962751E', 'com.example.upgrade', 'android-1', 'Ride', 'active', NULL, 1795804371.3614917, 0, 1795775571.3614917, 1795775571.3614917, 1795775571.3852358, '{"activityState":"active","attributes":{"route":"android"},"attributesType":"Ride","autoEndAt":1795804371.3614917,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":5}},"createdAt":1795775571.3614917,"device":"android-1","id":"753D9997-A6A8-428E-8A36-318BD962751E","lastUpdateTimestamp":1795775571.3852358,"startedAt":1795775571.3614917,"style":"standard"}', NULL, DEFAULT);


--
-- Data for Name: activitytype; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: androidnotification; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: apikey; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.apikey VALUES ('bf1040c8dba309af20b61e75ec004e8342002049539697ede000e82067e80ed5', NULL, NULL, 1795775570.6310768);
INSERT INTO public.apikey VALUES ('d74091bdba20a3c8080131503e7dd695c62c1a5e1cd341211edb72b023d75538', 'com.example.upgrade', NULL, 1795775570.8010843);


--
-- Data for Name: app; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.app VALUES ('com.example.upgrade', 'Upgrade', 1795775570.80086, false, false);


--
-- Data for Name: appsettings; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: channel; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.channel VALUES ('CiltfNiYMgeO1J51mPla0Q==', 'com.example.upgrade', 1, 1795775570.91775, NULL, NULL, NULL, NULL);


--
-- Data for Name: delivery; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.delivery VALUES (1, 'activity:EB684715-63EA-4919-81C9-77C696F7C909', 'EB684715-63EA-4919-81C9-77C696F7C909', 'com.example.upgrade', 'phone-2', NULL, 'start', '{"aps":{"alert":{"body":"","title":"Upgrade"},"attributes":{"islet":"EB684715-63EA-4919-81C9-77C696F7C909","route":"delivered"},"attributes-type":"Ride","content-state":{"eta":10},"event":"start","input-push-token":1,"timestamp":1795775570}}', true, 1795804370.939255, 'sending', 1, 1795775570.939255, 1795775630.9504347, 1795775570.939255, NULL, 'b26c31ca-eec8-4110-b931-856045d30f0c');
INSERT INTO public.delivery VALUES (2, 'activity:EB684715-63EA-4919-81C9-77C696F7C909', 'EB684715-63EA-4919-81C9-77C696F7C909', 'com.example.upgrade', 'phone-2', NULL, 'update', '{"aps":{"content-state":{"eta":7},"event":"update","timestamp":1795775570}}', false, 1795804370.9722052, 'pending', 0, 1795775570.9722052, NULL, 1795775570.9722052, NULL, '53ba4d79-5041-4e28-a72c-c3e9ce8cc112');
INSERT INTO public.delivery VALUES (3, 'activity:753D9997-A6A8-428E-8A36-318BD962751E', '753D9997-A6A8-428E-8A36-318BD962751E', 'com.example.upgrade', 'android-1', NULL, 'start', '{"activityId":"753D9997-A6A8-428E-8A36-318BD962751E","attributes":{"route":"android"},"attributesType":"Ride","bundleId":"com.example.upgrade","contentState":{"eta":10},"event":"start","notification":{"text":"Eta 10","title":"Ride"},"timestamp":1795775571}', true, 1795804371.3614917, 'sending', 1, 1795775571.3614917, 1795775631.3817344, 1795775571.3614917, NULL, 'a41b62fe-08af-4e0e-acf5-42d74e479d21');
INSERT INTO public.delivery VALUES (4, 'activity:753D9997-A6A8-428E-8A36-318BD962751E', '753D9997-A6A8-428E-8A36-318BD962751E', 'com.example.upgrade', 'android-1', NULL, 'update', '{"activityId":"753D9997-A6A8-428E-8A36-318BD962751E","attributes":{"route":"android"},"attributesType":"Ride","bundleId":"com.example.upgrade","contentState":{"eta":5},"event":"update","notification":{"text":"Eta 5","title":"Ride"},"timestamp":1795775571}', false, 1795804371.3852358, 'pending', 0, 1795775571.3852358, NULL, 1795775571.3852358, NULL, '175363c3-ba7c-4d05-9012-8491e0d5486e');


--
-- Data for Name: deliverycredential; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.deliverycredential VALUES ('com.example.upgrade', 'development', 'TEAM123456', 'KEY7654321', '-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgN5CyyY3dxeZ2Fw1n
eXWMU+xl1G2VejYntUfLB9aZO+2hRANCAASi8IDt1g8gn3WIDltqBFis4Hb++mGn
Yi3sNU5caEsTpwHIcA/KgE8i1b8QRNOWvDLkj2rYIsI187F1zeZG6rVr
-----END PRIVATE KEY-----
', 'https://127.0.0.1:9', NULL, 1795775570.9228413, NULL);


--
-- Data for Name: device; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.device VALUES ('default', 'Default', 1795775570.6117873, 'ios');
INSERT INTO public.device VALUES ('phone-2', 'Second phone', 1795775570.8107033, 'ios');
INSERT INTO public.device VALUES ('android-1', 'Pixel', 1795775571.336154, 'android');


--
-- Data for Name: event; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.event VALUES (1, 1795775570.8175352, 'started', 'com.example.upgrade', 'default', '403CEE93-198A-4D5B-9EF6-1694020F9671', '{"activityState":"active","attributes":{"route":"active"},"attributesType":"Ride","autoEndAt":1795804370.8175352,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795775570.8175352,"device":"default","id":"403CEE93-198A-4D5B-9EF6-1694020F9671","startedAt":1795775570.8175352,"style":"standard"}');
INSERT INTO public.event VALUES (2, 1795775570.8338366, 'contentUpdated', 'com.example.upgrade', 'default', '403CEE93-198A-4D5B-9EF6-1694020F9671', '{"content":{"relevanceScore":0,"state":{"eta":8}},"timestamp":1795775570.8338366}');
INSERT INTO public.event VALUES (3, 1795775570.8402882, 'contentUpdated', 'com.example.upgrade', 'default', '403CEE93-198A-4D5B-9EF6-1694020F9671', '{"content":{"relevanceScore":0,"state":{"eta":6}},"timestamp":1795775570.8402882}');
INSERT INTO public.event VALUES (4, 1795775570.8402882, 'alert', 'com.example.upgrade', 'default', '403CEE93-198A-4D5B-9EF6-1694020F9671', '{"body":"6 minutes","title":"Closer"}');
INSERT INTO public.event VALUES (5, 1795775570.8452513, 'started', 'com.example.upgrade', 'default', 'CCA6645C-2D21-4E91-B9E8-CA108D82B533', '{"activityState":"active","attributes":{"route":"ended"},"attributesType":"Ride","autoEndAt":1795804370.8452513,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795775570.8452513,"device":"default","id":"CCA6645C-2D21-4E91-B9E8-CA108D82B533","startedAt":1795775570.8452513,"style":"standard"}');
INSERT INTO public.event VALUES (6, 1795775570.8543148, 'contentUpdated', 'com.example.upgrade', 'default', 'CCA6645C-2D21-4E91-B9E8-CA108D82B533', '{"content":{"relevanceScore":0,"state":{"eta":4}},"timestamp":1795775570.8543148}');
INSERT INTO public.event VALUES (7, 1795775570.8596582, 'contentUpdated', 'com.example.upgrade', 'default', 'CCA6645C-2D21-4E91-B9E8-CA108D82B533', '{"content":{"relevanceScore":0,"state":{"eta":0}},"timestamp":1795775570.8596582}');
INSERT INTO public.event VALUES (8, 1795775570.8596582, 'stateChanged', 'com.example.upgrade', 'default', 'CCA6645C-2D21-4E91-B9E8-CA108D82B533', '{"at":1795775570.8596582,"from":"active","reason":"endedByApp","to":"ended"}');
INSERT INTO public.event VALUES (9, 1795775570.8651245, 'started', 'com.example.upgrade', 'phone-2', '963E7621-F5F2-43B6-BD0E-31E1C8A6F2B4', '{"activityState":"active","attributes":{"route":"dismissed"},"attributesType":"Ride","autoEndAt":1795804370.8651245,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795775570.8651245,"device":"phone-2","id":"963E7621-F5F2-43B6-BD0E-31E1C8A6F2B4","startedAt":1795775570.8651245,"style":"standard"}');
INSERT INTO public.event VALUES (10, 1795775570.8739195, 'stateChanged', 'com.example.upgrade', 'phone-2', '963E7621-F5F2-43B6-BD0E-31E1C8A6F2B4', '{"at":1795775570.8739195,"from":"active","reason":"endedByApp","to":"ended"}');
INSERT INTO public.event VALUES (11, 1795775570.8739195, 'stateChanged', 'com.example.upgrade', 'phone-2', '963E7621-F5F2-43B6-BD0E-31E1C8A6F2B4', '{"at":1795775570.8739195,"from":"ended","reason":"dismissalPolicy","to":"dismissed"}');
INSERT INTO public.event VALUES (12, 1795775570.8798075, 'started', 'com.example.upgrade', 'default', '52BE71AF-FF19-482E-931A-FAFD85E794DD', '{"activityState":"active","attributes":{"route":"key"},"attributesType":"Ride","autoEndAt":1795804370.8798075,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":3}},"createdAt":1795775570.8798075,"device":"default","id":"52BE71AF-FF19-482E-931A-FAFD85E794DD","key":"order-7","startedAt":1795775570.8798075,"style":"standard"}');
INSERT INTO public.event VALUES (13, 1795775570.890996, 'contentUpdated', 'com.example.upgrade', 'default', '52BE71AF-FF19-482E-931A-FAFD85E794DD', '{"content":{"relevanceScore":0,"state":{"eta":2}},"timestamp":1795775570.890996}');
INSERT INTO public.event VALUES (14, 1795775570.898759, 'started', 'com.example.upgrade', 'default', 'AE72A357-E9FD-4308-8D5E-07B79AD621F7', '{"activityState":"active","attributes":{"route":"token"},"attributesType":"Ride","autoEndAt":1795804370.898759,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795775570.898759,"device":"default","id":"AE72A357-E9FD-4308-8D5E-07B79AD621F7","pushToken":"52b3b7c35224c25a45d70756329896e6fdfab370dc119a5a2f3adca9e3afc2b7","pushType":"token","startedAt":1795775570.898759,"style":"standard"}');
INSERT INTO public.event VALUES (15, 1795775570.898759, 'pushTokenUpdated', 'com.example.upgrade', 'default', 'AE72A357-E9FD-4308-8D5E-07B79AD621F7', '{"kind":"activity","pushToken":"52b3b7c35224c25a45d70756329896e6fdfab370dc119a5a2f3adca9e3afc2b7"}');
INSERT INTO public.event VALUES (16, 1795775570.939255, 'started', 'com.example.upgrade', 'phone-2', 'EB684715-63EA-4919-81C9-77C696F7C909', '{"activityState":"active","attributes":{"route":"delivered"},"attributesType":"Ride","autoEndAt":1795804370.939255,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795775570.939255,"device":"phone-2","id":"EB684715-63EA-4919-81C9-77C696F7C909","startedAt":1795775570.939255,"style":"standard"}');
INSERT INTO public.event VALUES (17, 1795775570.939255, 'delivery', 'com.example.upgrade', 'phone-2', 'EB684715-63EA-4919-81C9-77C696F7C909', '{"attempt":0,"delivery":1,"event":"start","note":"push-to-start to abababab…abababab (development); an alert supplied (\"Upgrade\"): a push-to-start needs one","outcome":"queued"}');
INSERT INTO public.event VALUES (18, 1795775570.9722052, 'contentUpdated', 'com.example.upgrade', 'phone-2', 'EB684715-63EA-4919-81C9-77C696F7C909', '{"content":{"relevanceScore":0,"state":{"eta":7}},"timestamp":1795775570.9722052}');
INSERT INTO public.event VALUES (19, 1795775570.9722052, 'delivery', 'com.example.upgrade', 'phone-2', 'EB684715-63EA-4919-81C9-77C696F7C909', '{"attempt":0,"delivery":2,"event":"update","outcome":"queued"}');
INSERT INTO public.event VALUES (20, 1795775571.3614917, 'started', 'com.example.upgrade', 'android-1', '753D9997-A6A8-428E-8A36-318BD962751E', '{"activityState":"active","attributes":{"route":"android"},"attributesType":"Ride","autoEndAt":1795804371.3614917,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795775571.3614917,"device":"android-1","id":"753D9997-A6A8-428E-8A36-318BD962751E","startedAt":1795775571.3614917,"style":"standard"}');
INSERT INTO public.event VALUES (21, 1795775571.3614917, 'delivery', 'com.example.upgrade', 'android-1', '753D9997-A6A8-428E-8A36-318BD962751E', '{"attempt":0,"delivery":3,"event":"start","note":"to Android phone fcm-eeee…eeeeeeee through FCM","outcome":"queued"}');
INSERT INTO public.event VALUES (22, 1795775571.3852358, 'contentUpdated', 'com.example.upgrade', 'android-1', '753D9997-A6A8-428E-8A36-318BD962751E', '{"content":{"relevanceScore":0,"state":{"eta":5}},"timestamp":1795775571.3852358}');
INSERT INTO public.event VALUES (23, 1795775571.3852358, 'delivery', 'com.example.upgrade', 'android-1', '753D9997-A6A8-428E-8A36-318BD962751E', '{"attempt":0,"delivery":4,"event":"update","outcome":"queued"}');


--
-- Data for Name: fcmaccesstoken; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: fcmcredential; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.fcmcredential VALUES ('com.example.upgrade', 'islet-upgrade', 'firebase-adminsdk-o2pdx@islet-upgrade.iam.gserviceaccount.com', 'ac774e0beb25813b8e5fa7b9d5bc2ad34e362f41', 'https://127.0.0.1:33667/token', '{"auth_provider_x509_cert_url":"https://www.googleapis.com/oauth2/v1/certs","auth_uri":"https://accounts.google.com/o/oauth2/auth","client_email":"firebase-adminsdk-o2pdx@islet-upgrade.iam.gserviceaccount.com","client_id":"126508623927031516520","client_x509_cert_url":"https://www.googleapis.com/robot/v1/metadata/x509/firebase%2Dadminsdk%2Do2pdx%40islet%2Dupgrade%2Eiam%2Egserviceaccount%2Ecom","private_key":"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDcRjejyrz0/aWe\nqlv66c5l66YgDHoQpT+2qJA0OMxn/iHCITFR5DQ6wGOfOUyMbT1bPKatWAksqhIY\nN8icmp6B1tgWYDchgMAFYdPZIgz4WKmoSS00L2DUEVkOG5EFFde65UyobuSEid4V\nOS+tQLyFIQOT9BQtfT+Kv/TPd9ew226eVlgnb5lRnOcmsnAqwSHplqStdozgnoUn\nDzPXkF3b3ERKx/K7lxPzsGZ65JmizxU5f5eeVrM6qb95FGwf5fZJRgcGxxfFaY2O\nhphmcAGl4kMBJ74YLtQ1JyghG1imI9Hrto2VkoQITHn1tB+X4zBSF5bCaJ2zA8+2\nnUyYxiMzAgMBAAECggEAEOhELbVKYFT2bmxNwmpJ0Qw6ZGwGE9sAk0jy8J80yVKk\norL2MdPzUlh2t7+n1CuFBx4WU73VznDWEg0jan8lECWT0SaHdMczdfZL/XbzSeim\n9RImKcLtNWSI0mAOoeD1qGnLQtkS1JLZ0gU2rJ9dw6uEtnQzTEk4ebJBhzSAAMS3\n3Q3NCGwg2n67m7phDFn3p057JR/btv+fqt/G4nTGGiCx/EjUEVFTphaQtTzxN0+K\ng+BMfnApJk1SFaRxmD9ErvCNts4hgBJBC+OAbvt5epGt9VJ+UoFzjXbG1tkQNra1\ngbfg5e0NG5KcgkK7sJRKuVFpl7YlZZaok0glMEL+SQKBgQD3bnI0Mw9kzO9Mz0gO\n9g9qZa/a5PrU6J/nKEsTW1CIhWTLoEc7ywNmCpt8Ma6+iduajuThwI1pStLIYa/K\nXk1/nO10uvaz7Xk9hUFOrd407rn7aDTH2Z84ad6aEz7pKo5TykJMORB7p1vHwGne\n/k3YA8JVQojjP+j0WQ1YgK0OrwKBgQDj5wPXXmzLkNQJmajeXHTZxKDbjBvut9IJ\nVVxFJiz5pSv+bR7VMhZ4uZbZ11VipFZwBqANWEg7i4asTNGprVSyaLMOiZHp9zLN\n98Uk8+4tgieOrO0k+sSzwE7d8Ef/32K51pt+uq0iyx0aY5sR97dXgvbxIspH1sxO\nbwPpJhV0vQKBgQC4t61upsfROuVTdFOZR70Oc0erpNJVbC0kBwK1OrCOmvc6xTco\nvlCVN0oIl5abDJPzeMYKexOXDZL6oWL5MxmsMV1cjc9rV9fxQ7ATqt1+qtIRjCQL\nJr4lAXR7le6bZ3fFufNwsBFMHw73uv/OyA8ZOwUzXW6QKMAi2vCJp9aKZQKBgH8N\ncx7GDXEPNKaFe5c7hAlDjUnYOlpDMFzzsZT7S2eBpZ0ZyG6ildSH4olfesKbS3T4\nvJGz/dD0YAf+a4RklStBI1GfcDE3FqOs1cNcGhRU0yi/TxWml7J+K3mfUwRazPc9\npUJpX8xd38Ouc+z4ZMXsxS55brvOC+hOC6gXCy8hAoGARAdMfzbs20TDUfIKDr09\n/1mYOcMGF1LeVkUCX7paRjcgB7rc9q7j9NdXqTaul/Ka4zTmw0wW9jQaywd0R/Bc\nwyt7LUDQ1u/oLQqEOYjky6ZoWFuoVePtfZ8xNKdVmhFUYtjmU5XdpZGLcAy8Es98\n/ejlvm/0SlD9Si2xnEe5lzU=\n-----END PRIVATE KEY-----\n\n","private_key_id":"ac774e0beb25813b8e5fa7b9d5bc2ad34e362f41","project_id":"islet-upgrade","token_uri":"https://127.0.0.1:33667/token","type":"service_account","universe_domain":"googleapis.com"}', 'https://127.0.0.1:9', NULL, 1795775571.3243136, NULL);


--
-- Data for Name: fcmserviceaccount; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.fcmserviceaccount VALUES ('firebase-adminsdk-o2pdx@islet-upgrade.iam.gserviceaccount.com', 'islet-upgrade', 'ac774e0beb25813b8e5fa7b9d5bc2ad34e362f41', '-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA3EY3o8q89P2lnqpb+unO
ZeumIAx6EKU/tqiQNDjMZ/4hwiExUeQ0OsBjnzlMjG09WzymrVgJLKoSGDfInJqe
gdbYFmA3IYDABWHT2SIM+FipqEktNC9g1BFZDhuRBRXXuuVMqG7khIneFTkvrUC8
hSEDk/QULX0/ir/0z3fXsNtunlZYJ2+ZUZznJrJwKsEh6ZakrXaM4J6FJw8z15Bd
29xESsfyu5cT87BmeuSZos8VOX+XnlazOqm/eRRsH+X2SUYHBscXxWmNjoaYZnAB
peJDASe+GC7UNScoIRtYpiPR67aNlZKECEx59bQfl+MwUheWwmidswPPtp1MmMYj
MwIDAQAB
-----END PUBLIC KEY-----', 1795775571.315415);


--
-- Data for Name: islet_migration; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.islet_migration VALUES (1, 'the tables of SQLite''s v10, events numbered at commit', '2026-11-27 10:32:50.462189+00');
INSERT INTO public.islet_migration VALUES (2, 'activities listed page by page in relevance order', '2026-11-27 10:32:50.526816+00');
INSERT INTO public.islet_migration VALUES (3, 'an app''s delivery paused', '2026-11-27 10:32:50.538941+00');
INSERT INTO public.islet_migration VALUES (4, 'room on activity pages for updates in place', '2026-11-27 10:32:50.542097+00');
INSERT INTO public.islet_migration VALUES (5, 'finished deliveries and an activity''s phone tokens found for the purge', '2026-11-27 10:32:50.545151+00');
INSERT INTO public.islet_migration VALUES (6, 'Android phones, FCM credentials, and Islet playing Google', '2026-11-27 10:32:50.550019+00');


--
-- Data for Name: layout; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: phoneactivity; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.phoneactivity VALUES ('EB684715-63EA-4919-81C9-77C696F7C909', 'com.example.upgrade', 'phone-2', 'development', NULL, 'active', '', 'ios');
INSERT INTO public.phoneactivity VALUES ('753D9997-A6A8-428E-8A36-318BD962751E', 'com.example.upgrade', 'android-1', 'production', NULL, 'active', '', 'android');


--
-- Data for Name: phonetoken; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.phonetoken VALUES ('abababababababababababababababababababababababababababababababab', 'pushToStart', 'com.example.upgrade', 'phone-2', 'Ride', NULL, 'development', 1795775570.9298854, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.phonetoken VALUES ('cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd', 'update', 'com.example.upgrade', 'phone-2', NULL, 'EB684715-63EA-4919-81C9-77C696F7C909', 'development', 1795775570.9534736, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.phonetoken VALUES ('fcm-eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee', 'fcm', 'com.example.upgrade', 'android-1', NULL, NULL, 'production', 1795775571.3486972, NULL, NULL, NULL, NULL, NULL, NULL);


--
-- Data for Name: providerkey; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.providerkey VALUES ('KEY1234567', 'TEAM123456', 'com.example.upgrade', '-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEvV7tySpoFTManbn5qUF41xH4MF4c
vdo5qorPoB22gzvd7dWn80F2Qo+OMT5hVD5J7MJitomAjFcLj8HWn4Vsfw==
-----END PUBLIC KEY-----
', 1795775570.9108343);


--
-- Data for Name: pushtoken; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.pushtoken VALUES ('6b569b993157869607023998e3495995197f767982c7cef1c1db2d76f96f786e', 'pushToStart', NULL, 'default', 'com.example.upgrade', 1795775570.8010843, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('4f0f3d09d6c4cd761c70771bc4ebc40cd99596dc6e1f17bbd05476a6e7d7f880', 'pushToStart', NULL, 'phone-2', 'com.example.upgrade', 1795775570.8109193, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('52b3b7c35224c25a45d70756329896e6fdfab370dc119a5a2f3adca9e3afc2b7', 'activity', 'AE72A357-E9FD-4308-8D5E-07B79AD621F7', 'default', 'com.example.upgrade', 1795775570.898759, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('AET4OrC4wofJbRg7Llihqw:APA91b-PrQe7uwNIuG9WSNYQGdI4KWfOyevhbfKZieOGUE28NRfzanXt-PTgplOZkcacnAVFt41WkwBu9-AFxGNPOlDJ1gVOTuI4hojvt-ODmtAUGrgDj3OZ3upsp1cehLu4Y9t1dGWA', 'fcm', NULL, 'android-1', 'com.example.upgrade', 1795775571.3361855, NULL, NULL);


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

SELECT pg_catalog.setval('public.event_id', 23, true);


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


