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

INSERT INTO public.activity VALUES ('869E8620-1791-4A96-B48D-160233F5BA69', 'com.example.upgrade', 'default', 'Ride', 'active', NULL, 1795806941.8336668, 0, 1795778141.8336668, 1795778141.8336668, 1795778141.8651164, '{"activityState":"active","attributes":{"route":"active"},"attributesType":"Ride","autoEndAt":1795806941.8336668,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":6}},"createdAt":1795778141.8336668,"device":"default","id":"869E8620-1791-4A96-B48D-160233F5BA69","lastUpdateTimestamp":1795778141.8651164,"startedAt":1795778141.8336668,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('D7B64C53-A11A-4A42-B08D-39EC7F5F5C3F', 'com.example.upgrade', 'default', 'Ride', 'ended', NULL, 1795792541.8889332, 0, 1795778141.8716855, 1795778141.8716855, 1795778141.8889332, '{"activityState":"ended","attributes":{"route":"ended"},"attributesType":"Ride","autoEndAt":1795806941.8716855,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":0}},"createdAt":1795778141.8716855,"device":"default","dismissAt":1795792541.8889332,"endedAt":1795778141.8889332,"id":"D7B64C53-A11A-4A42-B08D-39EC7F5F5C3F","lastUpdateTimestamp":1795778141.8889332,"startedAt":1795778141.8716855,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('A692FAB6-7547-4378-8167-CDCEF2D240A6', 'com.example.upgrade', 'phone-2', 'Ride', 'dismissed', NULL, NULL, 0, 1795778141.8948395, 1795778141.8948395, 1795778141.9065776, '{"activityState":"dismissed","attributes":{"route":"dismissed"},"attributesType":"Ride","autoEndAt":1795806941.8948395,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795778141.8948395,"device":"phone-2","dismissAt":1795778141.9065776,"dismissedAt":1795778141.9065776,"endedAt":1795778141.9065776,"id":"A692FAB6-7547-4378-8167-CDCEF2D240A6","startedAt":1795778141.8948395,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('422DD631-1249-4CB1-8848-5D6A1A1C6D4E', 'com.example.upgrade', 'default', 'Ride', 'active', 'order-7', 1795806941.9128785, 0, 1795778141.9128785, 1795778141.9128785, 1795778141.9255753, '{"activityState":"active","attributes":{"route":"key"},"attributesType":"Ride","autoEndAt":1795806941.9128785,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":2}},"createdAt":1795778141.9128785,"device":"default","id":"422DD631-1249-4CB1-8848-5D6A1A1C6D4E","key":"order-7","lastUpdateTimestamp":1795778141.9255753,"startedAt":1795778141.9128785,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('E236ED90-526F-47B3-89E7-28A0C8965BD9', 'com.example.upgrade', 'default', 'Ride', 'active', NULL, 1795806941.9336295, 0, 1795778141.9336295, 1795778141.9336295, 1795778141.9336295, '{"activityState":"active","attributes":{"route":"token"},"attributesType":"Ride","autoEndAt":1795806941.9336295,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795778141.9336295,"device":"default","id":"E236ED90-526F-47B3-89E7-28A0C8965BD9","pushToken":"53b3950f951ff047d324abbf23a8a98302e6aa8d6a164108e59aa77c193f2cc2","pushType":"token","startedAt":1795778141.9336295,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('04B70AE4-FB83-4125-9E83-B9DD7675C771', 'com.example.upgrade', 'phone-2', 'Ride', 'active', NULL, 1795806941.994319, 0, 1795778141.994319, 1795778141.994319, 1795778142.0474641, '{"activityState":"active","attributes":{"route":"delivered"},"attributesType":"Ride","autoEndAt":1795806941.994319,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":7}},"createdAt":1795778141.994319,"device":"phone-2","id":"04B70AE4-FB83-4125-9E83-B9DD7675C771","lastUpdateTimestamp":1795778142.0474641,"startedAt":1795778141.994319,"style":"standard"}', NULL, DEFAULT);
INSERT INTO public.activity VALUES ('73B3FEF6-1B46-49E7-B4F1-C570E7C97D9F', 'com.example.upgrade', 'android-1', 'Ride', 'active', NULL, 1795806942.310935, 0, 1795778142.310935, 1795778142.310935, 1795778142.3338482, '{"activityState":"active","attributes":{"route":"android"},"attributesType":"Ride","autoEndAt":1795806942.310935,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":5}},"createdAt":1795778142.310935,"device":"android-1","id":"73B3FEF6-1B46-49E7-B4F1-C570E7C97D9F","lastUpdateTimestamp":1795778142.3338482,"startedAt":1795778142.310935,"style":"standard"}', NULL, DEFAULT);


--
-- Data for Name: activitytype; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: androidnotification; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: apikey; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.apikey VALUES ('3ef1c670e4993c68323afe7d83c4c8199352c7cb2b6ac35603ae4d3d6625b69c', NULL, NULL, 1795778141.6199908);
INSERT INTO public.apikey VALUES ('5297fe93abb729d97b80fffdb1a9c94e8abd4df7f37efd31ec55871a29f93433', 'com.example.upgrade', NULL, 1795778141.8088875);


--
-- Data for Name: app; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.app VALUES ('com.example.upgrade', 'Upgrade', 1795778141.8087354, false, false);


--
-- Data for Name: appsettings; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: channel; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.channel VALUES ('9ZGrgHKgaqU6tRFxHo4Bmw==', 'com.example.upgrade', 1, 1795778141.9595215, NULL, NULL, NULL, NULL);


--
-- Data for Name: delivery; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.delivery VALUES (1, 'activity:04B70AE4-FB83-4125-9E83-B9DD7675C771', '04B70AE4-FB83-4125-9E83-B9DD7675C771', 'com.example.upgrade', 'phone-2', NULL, 'start', '{"aps":{"alert":{"body":"","title":"Upgrade"},"attributes":{"islet":"04B70AE4-FB83-4125-9E83-B9DD7675C771","route":"delivered"},"attributes-type":"Ride","content-state":{"eta":10},"event":"start","input-push-token":1,"timestamp":1795778141}}', true, 1795806941.994319, 'sending', 1, 1795778141.994319, 1795778202.009146, 1795778141.994319, NULL, '64df8d0f-7895-449b-a0c6-29bce95e9b72');
INSERT INTO public.delivery VALUES (2, 'activity:04B70AE4-FB83-4125-9E83-B9DD7675C771', '04B70AE4-FB83-4125-9E83-B9DD7675C771', 'com.example.upgrade', 'phone-2', NULL, 'update', '{"aps":{"content-state":{"eta":7},"event":"update","timestamp":1795778142}}', false, 1795806942.0474641, 'pending', 0, 1795778142.0474641, NULL, 1795778142.0474641, NULL, '77c4ad10-c5ba-441d-abd5-0bc165fa1260');
INSERT INTO public.delivery VALUES (3, 'activity:73B3FEF6-1B46-49E7-B4F1-C570E7C97D9F', '73B3FEF6-1B46-49E7-B4F1-C570E7C97D9F', 'com.example.upgrade', 'android-1', NULL, 'start', '{"activityId":"73B3FEF6-1B46-49E7-B4F1-C570E7C97D9F","attributes":{"route":"android"},"attributesType":"Ride","bundleId":"com.example.upgrade","contentState":{"eta":10},"event":"start","notification":{"text":"Eta 10","title":"Ride"},"timestamp":1795778142}', true, 1795806942.310935, 'sending', 1, 1795778142.310935, 1795778202.3310008, 1795778142.310935, NULL, '3f7a1e06-4e12-4018-97b3-346fa648f2c1');
INSERT INTO public.delivery VALUES (4, 'activity:73B3FEF6-1B46-49E7-B4F1-C570E7C97D9F', '73B3FEF6-1B46-49E7-B4F1-C570E7C97D9F', 'com.example.upgrade', 'android-1', NULL, 'update', '{"activityId":"73B3FEF6-1B46-49E7-B4F1-C570E7C97D9F","attributes":{"route":"android"},"attributesType":"Ride","bundleId":"com.example.upgrade","contentState":{"eta":5},"event":"update","notification":{"text":"Eta 5","title":"Ride"},"timestamp":1795778142}', false, 1795806942.3338482, 'pending', 0, 1795778142.3338482, NULL, 1795778142.3338482, NULL, '455a1401-eceb-4c72-b080-e240bbb62d82');


--
-- Data for Name: deliverycredential; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.deliverycredential VALUES ('com.example.upgrade', 'development', 'TEAM123456', 'KEY7654321', '-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgfAsrBq5lX1C7IWrn
rOtzRbZxE6xAzyZzMh6emVSqQAahRANCAARUDKXuPH3ZzDvA+ygQH+dQP/alnbVK
aVNMOUwdckmjHMLPCCZ+kX++gRvzm5i7yOqGZ33pr4jl0DwtO7rjVPO+
-----END PRIVATE KEY-----
', 'https://127.0.0.1:9', NULL, 1795778141.9682913, NULL);


--
-- Data for Name: device; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.device VALUES ('default', 'Default', 1795778141.6033268, 'ios');
INSERT INTO public.device VALUES ('phone-2', 'Second phone', 1795778141.8244903, 'ios');
INSERT INTO public.device VALUES ('android-1', 'Pixel', 1795778142.2850199, 'android');


--
-- Data for Name: event; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.event VALUES (1, 1795778141.8336668, 'started', 'com.example.upgrade', 'default', '869E8620-1791-4A96-B48D-160233F5BA69', '{"activityState":"active","attributes":{"route":"active"},"attributesType":"Ride","autoEndAt":1795806941.8336668,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795778141.8336668,"device":"default","id":"869E8620-1791-4A96-B48D-160233F5BA69","startedAt":1795778141.8336668,"style":"standard"}');
INSERT INTO public.event VALUES (2, 1795778141.8549924, 'contentUpdated', 'com.example.upgrade', 'default', '869E8620-1791-4A96-B48D-160233F5BA69', '{"content":{"relevanceScore":0,"state":{"eta":8}},"timestamp":1795778141.8549924}');
INSERT INTO public.event VALUES (3, 1795778141.8651164, 'contentUpdated', 'com.example.upgrade', 'default', '869E8620-1791-4A96-B48D-160233F5BA69', '{"content":{"relevanceScore":0,"state":{"eta":6}},"timestamp":1795778141.8651164}');
INSERT INTO public.event VALUES (4, 1795778141.8651164, 'alert', 'com.example.upgrade', 'default', '869E8620-1791-4A96-B48D-160233F5BA69', '{"body":"6 minutes","title":"Closer"}');
INSERT INTO public.event VALUES (5, 1795778141.8716855, 'started', 'com.example.upgrade', 'default', 'D7B64C53-A11A-4A42-B08D-39EC7F5F5C3F', '{"activityState":"active","attributes":{"route":"ended"},"attributesType":"Ride","autoEndAt":1795806941.8716855,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795778141.8716855,"device":"default","id":"D7B64C53-A11A-4A42-B08D-39EC7F5F5C3F","startedAt":1795778141.8716855,"style":"standard"}');
INSERT INTO public.event VALUES (6, 1795778141.881784, 'contentUpdated', 'com.example.upgrade', 'default', 'D7B64C53-A11A-4A42-B08D-39EC7F5F5C3F', '{"content":{"relevanceScore":0,"state":{"eta":4}},"timestamp":1795778141.881784}');
INSERT INTO public.event VALUES (7, 1795778141.8889332, 'contentUpdated', 'com.example.upgrade', 'default', 'D7B64C53-A11A-4A42-B08D-39EC7F5F5C3F', '{"content":{"relevanceScore":0,"state":{"eta":0}},"timestamp":1795778141.8889332}');
INSERT INTO public.event VALUES (8, 1795778141.8889332, 'stateChanged', 'com.example.upgrade', 'default', 'D7B64C53-A11A-4A42-B08D-39EC7F5F5C3F', '{"at":1795778141.8889332,"from":"active","reason":"endedByApp","to":"ended"}');
INSERT INTO public.event VALUES (9, 1795778141.8948395, 'started', 'com.example.upgrade', 'phone-2', 'A692FAB6-7547-4378-8167-CDCEF2D240A6', '{"activityState":"active","attributes":{"route":"dismissed"},"attributesType":"Ride","autoEndAt":1795806941.8948395,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795778141.8948395,"device":"phone-2","id":"A692FAB6-7547-4378-8167-CDCEF2D240A6","startedAt":1795778141.8948395,"style":"standard"}');
INSERT INTO public.event VALUES (10, 1795778141.9065776, 'stateChanged', 'com.example.upgrade', 'phone-2', 'A692FAB6-7547-4378-8167-CDCEF2D240A6', '{"at":1795778141.9065776,"from":"active","reason":"endedByApp","to":"ended"}');
INSERT INTO public.event VALUES (11, 1795778141.9065776, 'stateChanged', 'com.example.upgrade', 'phone-2', 'A692FAB6-7547-4378-8167-CDCEF2D240A6', '{"at":1795778141.9065776,"from":"ended","reason":"dismissalPolicy","to":"dismissed"}');
INSERT INTO public.event VALUES (12, 1795778141.9128785, 'started', 'com.example.upgrade', 'default', '422DD631-1249-4CB1-8848-5D6A1A1C6D4E', '{"activityState":"active","attributes":{"route":"key"},"attributesType":"Ride","autoEndAt":1795806941.9128785,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":3}},"createdAt":1795778141.9128785,"device":"default","id":"422DD631-1249-4CB1-8848-5D6A1A1C6D4E","key":"order-7","startedAt":1795778141.9128785,"style":"standard"}');
INSERT INTO public.event VALUES (13, 1795778141.9255753, 'contentUpdated', 'com.example.upgrade', 'default', '422DD631-1249-4CB1-8848-5D6A1A1C6D4E', '{"content":{"relevanceScore":0,"state":{"eta":2}},"timestamp":1795778141.9255753}');
INSERT INTO public.event VALUES (14, 1795778141.9336295, 'started', 'com.example.upgrade', 'default', 'E236ED90-526F-47B3-89E7-28A0C8965BD9', '{"activityState":"active","attributes":{"route":"token"},"attributesType":"Ride","autoEndAt":1795806941.9336295,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795778141.9336295,"device":"default","id":"E236ED90-526F-47B3-89E7-28A0C8965BD9","pushToken":"53b3950f951ff047d324abbf23a8a98302e6aa8d6a164108e59aa77c193f2cc2","pushType":"token","startedAt":1795778141.9336295,"style":"standard"}');
INSERT INTO public.event VALUES (15, 1795778141.9336295, 'pushTokenUpdated', 'com.example.upgrade', 'default', 'E236ED90-526F-47B3-89E7-28A0C8965BD9', '{"kind":"activity","pushToken":"53b3950f951ff047d324abbf23a8a98302e6aa8d6a164108e59aa77c193f2cc2"}');
INSERT INTO public.event VALUES (16, 1795778141.994319, 'started', 'com.example.upgrade', 'phone-2', '04B70AE4-FB83-4125-9E83-B9DD7675C771', '{"activityState":"active","attributes":{"route":"delivered"},"attributesType":"Ride","autoEndAt":1795806941.994319,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795778141.994319,"device":"phone-2","id":"04B70AE4-FB83-4125-9E83-B9DD7675C771","startedAt":1795778141.994319,"style":"standard"}');
INSERT INTO public.event VALUES (17, 1795778141.994319, 'delivery', 'com.example.upgrade', 'phone-2', '04B70AE4-FB83-4125-9E83-B9DD7675C771', '{"attempt":0,"delivery":1,"event":"start","note":"push-to-start to abababab…abababab (development); an alert supplied (\"Upgrade\"): a push-to-start needs one","outcome":"queued"}');
INSERT INTO public.event VALUES (18, 1795778142.0474641, 'contentUpdated', 'com.example.upgrade', 'phone-2', '04B70AE4-FB83-4125-9E83-B9DD7675C771', '{"content":{"relevanceScore":0,"state":{"eta":7}},"timestamp":1795778142.0474641}');
INSERT INTO public.event VALUES (19, 1795778142.0474641, 'delivery', 'com.example.upgrade', 'phone-2', '04B70AE4-FB83-4125-9E83-B9DD7675C771', '{"attempt":0,"delivery":2,"event":"update","outcome":"queued"}');
INSERT INTO public.event VALUES (20, 1795778142.310935, 'started', 'com.example.upgrade', 'android-1', '73B3FEF6-1B46-49E7-B4F1-C570E7C97D9F', '{"activityState":"active","attributes":{"route":"android"},"attributesType":"Ride","autoEndAt":1795806942.310935,"bundleId":"com.example.upgrade","content":{"relevanceScore":0,"state":{"eta":10}},"createdAt":1795778142.310935,"device":"android-1","id":"73B3FEF6-1B46-49E7-B4F1-C570E7C97D9F","startedAt":1795778142.310935,"style":"standard"}');
INSERT INTO public.event VALUES (21, 1795778142.310935, 'delivery', 'com.example.upgrade', 'android-1', '73B3FEF6-1B46-49E7-B4F1-C570E7C97D9F', '{"attempt":0,"delivery":3,"event":"start","note":"to Android phone fcm-eeee…eeeeeeee through FCM","outcome":"queued"}');
INSERT INTO public.event VALUES (22, 1795778142.3338482, 'contentUpdated', 'com.example.upgrade', 'android-1', '73B3FEF6-1B46-49E7-B4F1-C570E7C97D9F', '{"content":{"relevanceScore":0,"state":{"eta":5}},"timestamp":1795778142.3338482}');
INSERT INTO public.event VALUES (23, 1795778142.3338482, 'delivery', 'com.example.upgrade', 'android-1', '73B3FEF6-1B46-49E7-B4F1-C570E7C97D9F', '{"attempt":0,"delivery":4,"event":"update","outcome":"queued"}');


--
-- Data for Name: fcmaccesstoken; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: fcmcredential; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.fcmcredential VALUES ('com.example.upgrade', 'islet-upgrade', 'firebase-adminsdk-2p8hd@islet-upgrade.iam.gserviceaccount.com', '97a2586d0fd5a8ea13d8c4b3867fdbba552a75b3', 'https://127.0.0.1:50097/token', '{"auth_provider_x509_cert_url":"https://www.googleapis.com/oauth2/v1/certs","auth_uri":"https://accounts.google.com/o/oauth2/auth","client_email":"firebase-adminsdk-2p8hd@islet-upgrade.iam.gserviceaccount.com","client_id":"106919462788519686120","client_x509_cert_url":"https://www.googleapis.com/robot/v1/metadata/x509/firebase%2Dadminsdk%2D2p8hd%40islet%2Dupgrade%2Eiam%2Egserviceaccount%2Ecom","private_key":"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQCVjlUN2wMWYStq\n1ka08UZ8kOTL0xmLdo+fPTKMqoeleErIvd/nLJrsy05cwAdTErInXzueXsKzNcUb\n/a2QaHhfysoxUsDoAGoGX9Q5ODYvD4ZX+5e4By6E/eg22AjmJS3AGFGyip+aLipj\nwACq4OxBS9qlzoMaEwzsdYXGKoFTU4aWGL9NFTbf1k+x6dYHvc7LiPKUjfWLtDW7\nPxOHGAinKY5HswBBYevHdUX3UW8ktr92p6Tswt388GGEF7HCLlZAPWOD5BeCPAha\nMXazgGyh81zyTvuXHJtxk+u9+N/RLOa8xnNYS4KQGuLL4+Xnmb5np2JcinTFvrbX\nVRtL//99AgMBAAECggEACdwCxnGQUAri4l2y9p3LYE3rD3bgwb10tXJC4Vwiqil2\ngKpn1uUtZ3v1tA6izPq4DPltxECKBGeAkZpVNWZ1vRbw4nSKrCDO3JG3u3f1tn+H\nA0jeVS8ABZt5khgG6ik8TWQtCqCx6eeuOro/MQS3/owCI5ksMm1cFkCfK5PEx9np\nduhfjLm8M7c3kHgO+Olj0w6D6D71ioJGzURTX3eiYw0YGKio4a0CtLqk8e/gU4D5\n1GrO7ZRBrPvQUlEgyA0G39ozVkqyy9iwR8Qd84q20Yx0feIU+FAn/8IHrRRTKzxz\nX03HvEP62bq4deFP/7+IJbv5CSgN1Lf908gKi6UGbwKBgQDPjz7dkPE0mqSz+s8n\ndlBIv7WrgmhbOvHz/EwrPew3dcE2A8gWHrInU2AzPhfjHU1Lp1XYR/xp5Gh8ktSE\nr6bSG0InHxyaK7/5AK4TvcbHKHewkkbfn4o0dlcDbn6Wd10QVlE9Vj2NEq7AEl20\nMA1e+mAojoHBUC5qyKDdZoPNlwKBgQC4daIRi7bt8xq4YeRZ1sLkcDztQiY1O5Y+\nVhgcDhiZMEDYJYkduXXxra880Uq2707UCsVo9UnNDI/+acjnJNmGo+VFjHJWs94G\nuyrSKs43GfO3YEOqpzBDBTDLVF2uumLdrFZHZVlKn4wuEMlsV/jt6cKphH8Wiu9G\npjhiiHRmCwKBgE0mSY/B2GZdNOtRRr68U4s29ygRCQkgF99A4G8STUMwGekh7rWK\nI15Kt29UnTxmH90HDfmeiEw0AkKLsULAp5lhWG2COvdzW6AKiKn92G0etZ6EQKPO\ngWiOtDkqURNMuuLfssLB048kaqAqM3pOginTlvp8Pe7FBvvaJzEkcclxAoGAM1AN\n6KGcHq9s9HPO6Sr0BkYuvLWVGWPdFLQwesV1FFA3CanPbeRkqflt8RYrmZ4SqKvi\nZKMvh4oCGHzm9V3r4SeApQs/11yr2+V/MP3VZcCjapSt3jAqHcq42yc59FxHGnFR\ngwTvhPHDNiFXVvtV9SD9FNkV3XiCvX2J2+cnsicCgYEAxO9Mr4UL5gbE5tXSWeMO\n3KSEyfj5tcrisxfM0pFdSHWG6SwPP8GhudDn7zQ3zgk85LDcCww/10P+Mu2kHN3h\nwIi31NBiKhPaeL0jVGpU9xBZlBCuUVNtE9DOUtupyqY8Hapi9kptxy/kgtdWWpg6\n/p7bjvpMyXtpbxYMW2XIT8k=\n-----END PRIVATE KEY-----\n\n","private_key_id":"97a2586d0fd5a8ea13d8c4b3867fdbba552a75b3","project_id":"islet-upgrade","token_uri":"https://127.0.0.1:50097/token","type":"service_account","universe_domain":"googleapis.com"}', 'https://127.0.0.1:9', NULL, 1795778142.269744, NULL);


--
-- Data for Name: fcmserviceaccount; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.fcmserviceaccount VALUES ('firebase-adminsdk-2p8hd@islet-upgrade.iam.gserviceaccount.com', 'islet-upgrade', '97a2586d0fd5a8ea13d8c4b3867fdbba552a75b3', '-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAlY5VDdsDFmEratZGtPFG
fJDky9MZi3aPnz0yjKqHpXhKyL3f5yya7MtOXMAHUxKyJ187nl7CszXFG/2tkGh4
X8rKMVLA6ABqBl/UOTg2Lw+GV/uXuAcuhP3oNtgI5iUtwBhRsoqfmi4qY8AAquDs
QUvapc6DGhMM7HWFxiqBU1OGlhi/TRU239ZPsenWB73Oy4jylI31i7Q1uz8ThxgI
pymOR7MAQWHrx3VF91FvJLa/dqek7MLd/PBhhBexwi5WQD1jg+QXgjwIWjF2s4Bs
ofNc8k77lxybcZPrvfjf0SzmvMZzWEuCkBriy+Pl55m+Z6diXIp0xb6211UbS///
fQIDAQAB
-----END PUBLIC KEY-----', 1795778142.2591348);


--
-- Data for Name: islet_migration; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.islet_migration VALUES (1, 'the tables of SQLite''s v10, events numbered at commit', '2026-11-27 11:15:41.449247+00');
INSERT INTO public.islet_migration VALUES (2, 'activities listed page by page in relevance order', '2026-11-27 11:15:41.509113+00');
INSERT INTO public.islet_migration VALUES (3, 'an app''s delivery paused', '2026-11-27 11:15:41.521111+00');
INSERT INTO public.islet_migration VALUES (4, 'room on activity pages for updates in place', '2026-11-27 11:15:41.52454+00');
INSERT INTO public.islet_migration VALUES (5, 'finished deliveries and an activity''s phone tokens found for the purge', '2026-11-27 11:15:41.527708+00');
INSERT INTO public.islet_migration VALUES (6, 'Android phones, FCM credentials, and Islet playing Google', '2026-11-27 11:15:41.532121+00');
INSERT INTO public.islet_migration VALUES (7, 'the push budget is each app''s on each phone', '2026-11-27 11:15:41.546628+00');


--
-- Data for Name: layout; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: phoneactivity; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.phoneactivity VALUES ('04B70AE4-FB83-4125-9E83-B9DD7675C771', 'com.example.upgrade', 'phone-2', 'development', NULL, 'active', '', 'ios');
INSERT INTO public.phoneactivity VALUES ('73B3FEF6-1B46-49E7-B4F1-C570E7C97D9F', 'com.example.upgrade', 'android-1', 'production', NULL, 'active', '', 'android');


--
-- Data for Name: phonebudget; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: phonetoken; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.phonetoken VALUES ('abababababababababababababababababababababababababababababababab', 'pushToStart', 'com.example.upgrade', 'phone-2', 'Ride', NULL, 'development', 1795778141.980186, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.phonetoken VALUES ('cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd', 'update', 'com.example.upgrade', 'phone-2', NULL, '04B70AE4-FB83-4125-9E83-B9DD7675C771', 'development', 1795778142.0130637, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.phonetoken VALUES ('fcm-eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee', 'fcm', 'com.example.upgrade', 'android-1', NULL, NULL, 'production', 1795778142.2979133, NULL, NULL, NULL, NULL, NULL, NULL);


--
-- Data for Name: providerkey; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.providerkey VALUES ('KEY1234567', 'TEAM123456', 'com.example.upgrade', '-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE79j7dRHga7WMwoAEJ+HB6IiY1k3j
pNBpNIpk/J58VZ7alTbkURWKZVCr7tivTOLShpN1oQ1egStPDKIpit8keA==
-----END PUBLIC KEY-----
', 1795778141.9491925);


--
-- Data for Name: pushtoken; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.pushtoken VALUES ('7afa0aef8284fd7ea3bf6672cbda858d67c09cfb9d209db1d7c629f200cc4477', 'pushToStart', NULL, 'default', 'com.example.upgrade', 1795778141.8088875, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('caa0a2d48fd8ffa7500a152cc58fff75b66853a1dd8d8b94325c03b11d83a974', 'pushToStart', NULL, 'phone-2', 'com.example.upgrade', 1795778141.8245149, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('53b3950f951ff047d324abbf23a8a98302e6aa8d6a164108e59aa77c193f2cc2', 'activity', 'E236ED90-526F-47B3-89E7-28A0C8965BD9', 'default', 'com.example.upgrade', 1795778141.9336295, NULL, NULL);
INSERT INTO public.pushtoken VALUES ('rCc-XVaIOPpRLJObX-ZV3g:APA91bOrWEOi_yLrXagIx8WdcGSy4-pvLKOhoNVl-W0HO20U1R-bkwbvJ9-1FVA9QnttIUUApAcbI3Q1kM3kP5yxNcOdCJ3cjULVq0ilx-iosyLH5d-t24qLHOnrKBcj282iMoUDvOHA', 'fcm', NULL, 'android-1', 'com.example.upgrade', 1795778142.2850375, NULL, NULL);


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


