-- {{comment}}
CREATE OR REPLACE FUNCTION {{qualified}}() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET standard_conforming_strings = on AS {{body_quote}}
BEGIN
{{statement}};
    RETURN NULL;
END
{{body_quote}};
REVOKE ALL ON FUNCTION {{qualified}}() FROM PUBLIC;
CREATE OR REPLACE TRIGGER {{name}} AFTER {{event}} ON {{table}}
    FOR EACH ROW EXECUTE FUNCTION {{qualified}}();
