-- {{comment}}
DROP TRIGGER IF EXISTS {{name}};
CREATE TRIGGER {{name}} AFTER {{event}} ON {{table}}
BEGIN
{{statement}};
END;
