-- {{comment}}
CREATE OR REPLACE FUNCTION {{qualified}}() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
{{statement}};
    RETURN NULL;
END
$fn$;
CREATE OR REPLACE TRIGGER {{name}} AFTER {{event}} ON {{table}}
    FOR EACH ROW EXECUTE FUNCTION {{qualified}}();
